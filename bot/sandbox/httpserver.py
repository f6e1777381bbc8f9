"""A tiny threaded HTTP server on loopback, shared by the stand-ins."""

from __future__ import annotations

import json
import ssl
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Incoming:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8") or "null")

    def form(self) -> dict[str, str]:
        return dict(parse_qsl(self.body.decode("utf-8"), keep_blank_values=True))


@dataclass
class Outgoing:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Outgoing:
        return cls(status, json.dumps(payload).encode("utf-8"), {"Content-Type": "application/json", **(headers or {})})


class LoopbackServer:
    """Serves ``handle(Incoming) -> Outgoing`` on 127.0.0.1 on a free port, in a daemon thread; when
    ``handle`` returns None the connection is closed without an answer (a connection that broke).

    Like the real APIs it keeps HTTP/1.1 connections alive between requests; ``connections`` counts
    the connections it accepted. With ``tls`` (a server context) it speaks HTTPS, as the real APIs do. ``refuse()`` plays a server that went away: the port stops listening
    (new connections are refused) and kept-alive connections are closed on their next request;
    ``resume()`` listens on the same port again.
    """

    def __init__(self, handle: Callable[[Incoming], Outgoing | None], *, tls: ssl.SSLContext | None = None) -> None:
        self._handle = handle
        self._tls = tls
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self._refusing = threading.Event()
        self._accepted = 0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        assert self._port, "start() first"
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self._port}"

    @property
    def connections(self) -> int:
        """Connections accepted since the first ``start()``."""
        with self._lock:
            return self._accepted

    def _accept(self) -> None:
        with self._lock:
            self._accepted += 1

    def start(self) -> LoopbackServer:
        handle = self._handle
        refusing = self._refusing

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, the body waited for the client's
            # delayed ACK (about 40 ms a call on keep-alive connections). Real API servers send at once.
            disable_nagle_algorithm = True

            def _serve(self) -> None:
                if refusing.is_set():  # the server is gone: drop the connection without an answer
                    self.close_connection = True
                    return
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                incoming = Incoming(
                    method=self.command,
                    path=parts.path,
                    query=dict(parse_qsl(parts.query, keep_blank_values=True)),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                outgoing = handle(incoming)
                if outgoing is None:
                    self.close_connection = True
                    return
                self.send_response(outgoing.status)
                for name, value in outgoing.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(outgoing.body)))
                self.end_headers()
                self.wfile.write(outgoing.body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by design
                pass

        self._server = _QuietServer(("127.0.0.1", self._port), Handler, on_accept=self._accept)
        self._port = self._server.server_address[1]
        if self._tls is not None:
            self._server.socket = self._tls.wrap_socket(self._server.socket, server_side=True)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="loopback-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def refuse(self) -> None:
        """Stop listening (connections are refused) until ``resume()``."""
        self._refusing.set()
        self.stop()

    def resume(self) -> None:
        self._refusing.clear()
        self.start()


class _QuietServer(ThreadingHTTPServer):
    """A client that hung up (a timeout, a dropped connection while refusing) is normal here, not a
    traceback on stderr. ``on_accept`` is called for each connection accepted."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, on_accept: Callable[[], None]) -> None:
        super().__init__(address, handler)
        self._on_accept = on_accept

    def process_request(self, request: Any, client_address: Any) -> None:
        self._on_accept()
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)
