/* errors.c - shmf_strerror: one sentence for every error code. */
#include <string.h>

#include <shmf.h>

const char *shmf_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case SHMF_E_NOTFOUND: return "no such filter or instance";
	case SHMF_E_FORMAT: return "segment or file is malformed (bad magic, size or field)";
	case SHMF_E_VERSION: return "segment has another format version";
	case SHMF_E_LAYOUT: return "segment was built with another struct layout (layout fingerprint mismatch)";
	case SHMF_E_OWNER: return "file or directory has an untrusted owner or mode";
	case SHMF_E_READONLY: return "write through a read-only handle (opened with SHMF_RDONLY)";
	case SHMF_E_TYPE: return "the filter type does not support this operation";
	case SHMF_E_FULL: return "filter is full";
	case SHMF_E_INVAL: return "invalid argument";
	case SHMF_E_NAME: return "invalid name (1-63 characters of A-Z a-z 0-9 _ . : -, not starting with '.')";
	case SHMF_E_EXISTS: return "a filter of that name already exists";
	case SHMF_E_RUNDIR:
		return "runtime directory unknown (set SHMF_RUNTIME_DIR to an absolute path, or XDG_RUNTIME_DIR)";
	case SHMF_E_DROPPED: return "filter was dropped while the handle was open";
	case SHMF_E_TOOBIG: return "filter would be too large";
	case SHMF_E_PROTO: return "unexpected reply on the control socket";
	case SHMF_E_BUSY:
		return "the cuckoo filter's relocation lock stayed held past the filter's lock timeout (a writer "
		       "stopped or stuck holding it, or its bytes overwritten)";
	case SHMF_E_NONSCALING:
		return "non scaling filter is full (a NONSCALING Bloom filter holds its capacity and refuses new keys)";
	case SHMF_E_IMPORTED:
		return "the filter was imported from RedisBloom and is read-only: it answers checks (and cuckoo "
		       "counts) as RedisBloom did, and takes no add or delete";
	default: break;
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}
