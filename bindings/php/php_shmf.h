/* php_shmf.h - the shmf PHP extension (shmf.c): Shmf\Filter over libshmf. */
#ifndef PHP_SHMF_H
#define PHP_SHMF_H

extern zend_module_entry shmf_module_entry;
#define phpext_shmf_ptr &shmf_module_entry

#define PHP_SHMF_VERSION "0.1.0"

#endif
