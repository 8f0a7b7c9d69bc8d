"""The example WSGI app as the gunicorn test serves it: each answer says
which worker gave it (X-Worker-Pid), and is held 5 ms so that concurrent
requests spread over the 4 workers."""
import os
import time

from click_dedupe_wsgi import application as example


def application(environ, start_response):
    def start(status, headers, exc_info=None):
        return start_response(status, headers + [("X-Worker-Pid", str(os.getpid()))], exc_info)

    time.sleep(0.005)
    return example(environ, start)
