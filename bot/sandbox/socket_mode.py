"""A loopback stand-in of Slack's Socket Mode WebSocket server, for tests and the benchmark.

What it does, as Slack does (docs.slack.dev "Using Socket Mode"): a connection opened on a URL
that ``apps.connections.open`` handed out gets a ``hello``; envelopes (``slash_commands``,
``interactive``, ...) carry an ``envelope_id`` the app must ack by sending
``{"envelope_id": ...}`` back; client pings are answered with pongs (RFC 6455). Several
connections may be open at once (Slack allows 10 per app); an envelope goes to one of them.

And what the network does to it (``drop``): ``fin`` (the TCP stream ends without a close frame,
as a proxy or a load balancer does), ``rst`` (SO_LINGER 0: the connection is reset), ``silent``
(the connection stays open but nothing more comes back, not even pongs) and ``refresh`` (Slack's
``disconnect`` envelope with ``reason: refresh_requested``; the old connection is closed a few
seconds later unless the client closed it first).

It implements just enough of RFC 6455 for that: the handshake, unfragmented frames (client
frames are masked, server frames are not), text, ping, pong and close. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import logging
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

log = logging.getLogger(__name__)

Drop = Literal["fin", "rst", "silent", "refresh"]
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_TEXT, _CLOSE, _PING, _PONG = 0x1, 0x8, 0x9, 0xA


@dataclass
class _Connection:
    sock: socket.socket
    live: bool = True  # takes envelopes and answers pings
    send_lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, opcode: int, payload: bytes) -> None:
        with self.send_lock:
            self.sock.sendall(_frame(opcode, payload))


def _frame(opcode: int, payload: bytes) -> bytes:
    """One unfragmented, unmasked server frame."""
    header = bytes([0x80 | opcode])
    size = len(payload)
    if size < 126:
        header += bytes([size])
    elif size < 1 << 16:
        header += bytes([126]) + struct.pack("!H", size)
    else:
        header += bytes([127]) + struct.pack("!Q", size)
    return header + payload


class SocketModeStandIn:
    """Slack's Socket Mode server side on 127.0.0.1; ``url()`` is what ``apps.connections.open`` returns."""

    def __init__(self, *, refresh_close_after: float = 5.0) -> None:
        self.refresh_close_after = refresh_close_after
        self.acks: dict[str, dict[str, Any]] = {}
        self.opened = 0  # connections that completed the handshake
        self._connections: list[_Connection] = []
        self._tickets = itertools.count(1)
        self._envelopes = itertools.count(1)
        self._lock = threading.Condition()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stopped = False

    def start(self) -> SocketModeStandIn:
        threading.Thread(target=self._accept, name="socket-mode-stand-in", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped = True
        self._listener.close()
        with self._lock:
            for connection in self._connections:
                _close(connection.sock)
            self._connections.clear()

    def url(self) -> str:
        """A fresh ``ws://`` URL, as ``apps.connections.open`` issues one per call."""
        return f"ws://127.0.0.1:{self._listener.getsockname()[1]}/link/?ticket={next(self._tickets)}"

    # --- what tests do ------------------------------------------------------------------

    def live_connections(self) -> int:
        with self._lock:
            return sum(1 for c in self._connections if c.live)

    def wait_for_connections(self, count: int, *, timeout: float = 10.0) -> bool:
        """Wait until ``count`` live connections are open; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: sum(1 for c in self._connections if c.live) >= count, timeout)

    def deliver(self, kind: str, payload: dict[str, Any]) -> str | None:
        """Send an envelope on the newest live connection; its envelope_id, or None when none is open."""
        with self._lock:
            live = [c for c in self._connections if c.live]
        if not live:
            return None
        envelope_id = f"env-{next(self._envelopes)}"
        envelope = {"envelope_id": envelope_id, "type": kind, "payload": payload, "accepts_response_payload": True}
        try:
            live[-1].send(_TEXT, json.dumps(envelope).encode())
        except OSError:
            return None
        return envelope_id

    def wait_for_ack(self, envelope_id: str, *, timeout: float = 10.0) -> dict[str, Any] | None:
        with self._lock:
            self._lock.wait_for(lambda: envelope_id in self.acks, timeout)
            return self.acks.get(envelope_id)

    def drop(self, kind: Drop) -> None:
        """Do ``kind`` to every live connection (see the module docstring)."""
        with self._lock:
            live = [c for c in self._connections if c.live]
            for connection in live:
                connection.live = False
        for connection in live:
            if kind == "fin":
                connection.sock.shutdown(socket.SHUT_WR)
            elif kind == "rst":
                connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                # The reader thread blocked in recv() holds the socket: the reset would wait for it.
                # SHUT_RD wakes it (and sends nothing); the last close then sends the RST.
                connection.sock.shutdown(socket.SHUT_RD)
                connection.sock.close()
            elif kind == "refresh":
                message = {"type": "disconnect", "reason": "refresh_requested", "debug_info": {"host": "stand-in"}}
                connection.send(_TEXT, json.dumps(message).encode())
                timer = threading.Timer(self.refresh_close_after, _close, args=[connection.sock])
                timer.daemon = True
                timer.start()
            # silent: nothing is sent any more, pings go unanswered, the TCP connection stays open

    # --- the server -------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopped:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=[sock], name="socket-mode-connection", daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        reader = _Reader(sock)
        try:
            accept = _handshake(sock, reader)
            if accept is None:
                return
            # The connection is open the moment the client has the 101, and ``hello`` comes first:
            # it is registered before the answer, and holds its send lock until hello is out.
            connection = _Connection(sock)
            with connection.send_lock:
                with self._lock:
                    self.opened += 1
                    self._connections.append(connection)
                    count = sum(1 for c in self._connections if c.live)
                    self._lock.notify_all()
                hello = {
                    "type": "hello",
                    "num_connections": count,
                    "connection_info": {"app_id": "A0SANDBOX"},
                    "debug_info": {"host": "stand-in", "approximate_connection_time": 3600},
                }
                sock.sendall(accept + _frame(_TEXT, json.dumps(hello).encode()))
            self._read(connection, reader)
        except OSError:
            pass
        finally:
            with self._lock:
                self._connections = [c for c in self._connections if c.sock is not sock]
                self._lock.notify_all()
            _close(sock)

    def _read(self, connection: _Connection, reader: _Reader) -> None:
        while True:
            frame = _read_frame(reader)
            if frame is None:
                return
            opcode, payload = frame
            if not connection.live:
                continue  # dropped: whatever the client sends is lost
            if opcode == _PING:
                connection.send(_PONG, payload)
            elif opcode == _CLOSE:
                connection.live = False
                connection.send(_CLOSE, payload[:2])
                return
            elif opcode == _TEXT:
                self._on_text(payload)

    def _on_text(self, payload: bytes) -> None:
        try:
            message = json.loads(payload)
        except ValueError:
            log.warning("socket mode stand-in: not JSON: %r", payload[:200])
            return
        if isinstance(message, dict) and "envelope_id" in message:
            with self._lock:
                self.acks[str(message["envelope_id"])] = message
                self._lock.notify_all()


class _Reader:
    """Exact reads on the raw socket (no ``makefile``: that would keep the descriptor open after close())."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def read(self, size: int) -> bytes:
        while len(self._buffer) < size:
            chunk = self._sock.recv(65536)
            if not chunk:
                break
            self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def head(self) -> bytes:
        """The HTTP request head, up to the empty line."""
        while b"\r\n\r\n" not in self._buffer and len(self._buffer) < 16384:
            chunk = self._sock.recv(4096)
            if not chunk:
                break
            self._buffer += chunk
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        return head


def _handshake(sock: socket.socket, reader: _Reader) -> bytes | None:
    """The 101 answer to a valid upgrade request (not yet sent); None after refusing it with a 400."""
    request_line, *lines = reader.head().split(b"\r\n")
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    key = headers.get("sec-websocket-key")
    if not request_line.startswith(b"GET /link/") or headers.get("upgrade", "").lower() != "websocket" or not key:
        sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        return None
    accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
    return (
        f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    ).encode()


def _read_frame(reader: _Reader) -> tuple[int, bytes] | None:
    """One client frame (masked, as RFC 6455 requires of clients); None at the end of the stream."""
    head = reader.read(2)
    if len(head) < 2:
        return None
    opcode, size = head[0] & 0x0F, head[1] & 0x7F
    if size == 126:
        size = struct.unpack("!H", reader.read(2))[0]
    elif size == 127:
        size = struct.unpack("!Q", reader.read(8))[0]
    mask = reader.read(4) if head[1] & 0x80 else b"\0\0\0\0"
    data = reader.read(size)
    if len(data) < size or len(mask) < 4:
        return None
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def _close(sock: socket.socket) -> None:
    """End the connection now: shutdown() also wakes a reader thread blocked in recv() on it."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def wait_until(condition: Any, timeout: float) -> bool:
    """Poll ``condition`` until it is true or ``timeout`` seconds pass (for the benchmark and tests)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False
