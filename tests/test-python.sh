#!/bin/bash
# test-python.sh - the Python binding's tests (tests/python/, pytest from
# Debian's python3-pytest, run by Debian's /usr/bin/python3) against the
# shmf module of this build tree (BUILD/bindings) and a private shmd each
# test file starts (tests/python/conftest.py). Installs python3-pytest
# and gunicorn when missing.
# Usage: test-python.sh SRC-DIR BUILD-DIR TEST-FILE [PYTEST-ARGS...]
set -u
SRC=$1 BUILD=$2 FILE=$3
shift 3
"$SRC/bindings/need-packages.sh" python3-pytest gunicorn curl
rc=$?
[ $rc -eq 0 ] || exit $rc
export SRC SHMD=$BUILD/shmd/shmd SHMCTL=$BUILD/tools/shmctl PYTHONPATH=$BUILD/bindings
# Nothing written into the source tree: no __pycache__, no .pytest_cache.
export PYTHONDONTWRITEBYTECODE=1
cd "$SRC/tests/python" && exec /usr/bin/python3 -m pytest -p no:cacheprovider -v -s "$FILE" "$@"
