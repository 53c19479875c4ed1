"""A stand-in's HTTP server: serving it in a thread or in the foreground, the request handler's shared part, and
the command line's listening arguments.  Standard library only, like the stand-ins themselves."""

from __future__ import annotations

import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_in_thread(httpd: ThreadingHTTPServer, name: str) -> threading.Thread:
    """Serve ``httpd`` in a daemon thread (stopped by ``httpd.shutdown()`` then ``thread.join()``)."""
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    return thread


class ServedStandIn:
    """A stand-in's HTTP server: ``start()`` serves it in a thread, ``serve_forever()`` in the caller's, ``stop()``
    ends either.  A subclass calls ``_listen`` in its ``__init__`` (``port=0``: any free port)."""

    thread_name = "standin"

    def _listen(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.httpd.standin = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def start(self):
        self._thread = serve_in_thread(self.httpd, self.thread_name)
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (Ctrl-C raises KeyboardInterrupt here); then call ``stop``."""
        self.httpd.serve_forever()

    def stop(self) -> None:
        self._stop_serving()

    def _stop_serving(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class StandInHandler(BaseHTTPRequestHandler):
    """What a stand-in's request handler shares: keep-alive HTTP/1.1, one ``_route(method)``, and ``_send``."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once (else each keep-alive answer waits ~40 ms)

    @property
    def standin(self):
        return self.server.standin

    def _route(self, method: str) -> None:
        raise NotImplementedError

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_PATCH(self):
        self._route("PATCH")

    def do_DELETE(self):
        self._route("DELETE")

    def _send(self, status: int, body: bytes, content_type: str = "application/json", headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def serve_until_interrupted(standin: ServedStandIn) -> None:
    """Serve in the foreground until Ctrl-C or SIGTERM (a process manager), then ``stop()`` the stand-in.

    Started in the background by a shell, a process inherits SIGINT ignored and Python then sets no handler:
    Ctrl-C (or a test's SIGINT) must still stop it, so both signals are handled here."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        standin.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        standin.stop()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def add_listen_arguments(parser) -> None:
    """A stand-in command's ``--port`` (required; 0: any free port) and ``--host``."""
    parser.add_argument("--port", type=int, required=True, help="Port to listen on (0: any free port).")
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1).")
