mod debian/shmf.ini
