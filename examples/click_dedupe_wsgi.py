"""click_dedupe_wsgi.py - click de-duplication in a WSGI app (no framework).

    GET /click?id=ID     200 "new" the first time a click ID is seen (count it,
                         forward it...), 204 for a repeat: from any worker
    GET /seen?id=A&id=B  one line per ID: "ID yes" or "ID no" (one batch check)

Served by gunicorn with the handle opened once, in the master, before it
forks its workers (preload_app); each worker uses the handle it inherited,
and follows a swap of the filter (shmctl build + swap) without a restart:

    shmctl create clicks --capacity 10000000 --fpr 0.000001 --mode 0660
    SHMF_RUNTIME_DIR=/run/shmd gunicorn --preload --workers 4 \\
        --bind 127.0.0.1:8000 click_dedupe_wsgi:application
"""
import os
from urllib.parse import parse_qs

import shmf

clicks = shmf.Filter(os.environ.get("CLICKS_FILTER", "clicks"), writable=True)


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    ids = parse_qs(environ.get("QUERY_STRING", "")).get("id", [])
    if not ids or path not in ("/click", "/seen"):
        start_response("400 Bad Request", [("Content-Type", "text/plain")])
        return [b"usage: /click?id=ID or /seen?id=ID[&id=ID...]\n"]
    try:
        if path == "/click":
            if not clicks.add(ids[0]):
                start_response("204 No Content", [])
                return []
            body = "new\n"
        else:
            body = "".join("%s %s\n" % (i, "yes" if hit else "no") for i, hit in zip(ids, clicks.check_many(ids)))
    except shmf.Error as e:  # the filter is missing, full, dropped...: say so, keep serving
        start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
        return [("%s\n" % e).encode()]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body.encode()]
