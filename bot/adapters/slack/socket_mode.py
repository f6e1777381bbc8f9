"""Socket Mode that stays connected: one WebSocket to Slack, replaced as soon as it stops working.

Why not slack_sdk's clients (``bench/socket_mode_drops.py`` measures all three; figures in the
README's Deploy section): when Slack's side ends the TCP stream without a close frame (a FIN, as
a proxy or a load balancer does), the built-in client keeps reading the empty socket at full CPU
until its stale check gives up, about a minute later; the others take seconds to notice a
connection that went silent or spend seconds in close. Commands and clicks sent meanwhile are lost.

This client (websocket-client's plain ``WebSocket``, one supervising thread):

- reads with a short socket timeout, so it never spins: an ended stream (FIN), a reset (RST) or a
  close frame ends the connection at once;
- pings every ``ping_interval`` seconds and gives the connection up when nothing at all (pong,
  ping, envelope) came back for ``ping_interval + pong_timeout`` seconds;
- on Slack's ``disconnect`` envelope (``refresh_requested``, ``warning``, ``link_disabled``, ...)
  opens the new connection first, then closes the old one (no gap);
- reconnects at once, then with jittered exponential backoff (capped) while Slack cannot be
  reached or connections end as soon as they open; ``apps.connections.open`` errors are logged
  without the token;
- hands each envelope to ``handle`` on a worker pool (the read loop never waits for the app) and
  sends the ack ``handle`` returns on the connection the envelope came from.

It knows nothing of Bolt: ``bolt_handler`` adapts a Bolt ``App`` to ``handle``.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import websocket
from slack_bolt import App, BoltRequest, BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

log = logging.getLogger(__name__)

Envelope = dict[str, Any]
Handle = Callable[[Envelope], "dict[str, Any] | None"]

READ_POLL_SECONDS = 0.5  # how long one read waits; bounds how late a ping or a stop is noticed
MAX_BACKOFF_SECONDS = 30.0
SHORT_LIVED_SECONDS = 2.0  # a connection that ends sooner counts as a failure to connect


class SocketModeConnection:
    """Keeps a Socket Mode connection open and feeds its envelopes to ``handle``."""

    def __init__(
        self,
        app_token: str,
        *,
        web_client: WebClient,
        handle: Handle,
        ping_interval: float = 2.0,
        pong_timeout: float = 2.0,
        connect_timeout: float = 10.0,
        workers: int = 8,
    ) -> None:
        self._app_token = app_token
        self._web = web_client
        self._handle = handle
        self._ping_interval = ping_interval
        self._pong_timeout = pong_timeout
        self._connect_timeout = connect_timeout
        self._workers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="socket-mode")
        self._stopping = threading.Event()
        self._connected = threading.Event()
        self._current: websocket.WebSocket | None = None
        self._thread = threading.Thread(target=self._run, name="socket-mode", daemon=True)

    def start(self, *, wait: float | None = None) -> bool:
        """Start the supervising thread; with ``wait``, block up to that long for the first connection."""
        self._thread.start()
        return self._connected.wait(wait) if wait is not None else True

    def close(self) -> None:
        """Stop reading (no new envelopes), let in-flight handlers ack, then close the connection."""
        self._stopping.set()
        self._thread.join(timeout=READ_POLL_SECONDS * 4)
        self._workers.shutdown(wait=True)
        if self._current is not None:
            _close_quietly(self._current)

    # --- the supervising loop ---------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        replacement: websocket.WebSocket | None = None
        while not self._stopping.is_set():
            try:
                ws = replacement or self._open()
            except Exception as error:  # noqa: BLE001 - any failure to connect is retried with backoff
                failures += 1
                delay = _backoff(failures)
                log.warning("Socket Mode: cannot connect (%s); retrying in %.1f s", _describe(error), delay)
                self._stopping.wait(delay)
                continue
            replacement = None
            if self._stopping.is_set():
                _close_quietly(ws)
                return
            self._current = ws
            self._connected.set()
            opened_at = time.monotonic()
            outcome = self._read(ws)
            if outcome == "stopping":
                return  # close() closes it once in-flight handlers have acked
            # A connection that ends right after it opened (e.g. Slack's too_many_websockets) must
            # not turn into a reconnect loop: those count as failures and back off.
            failures = failures + 1 if time.monotonic() - opened_at < SHORT_LIVED_SECONDS else 0
            if outcome == "refresh" and failures == 0:
                # Make before break: the new connection is open before the old one is closed.
                try:
                    replacement = self._open()
                except Exception as error:  # noqa: BLE001
                    log.warning("Socket Mode: cannot open the refreshed connection (%s)", _describe(error))
                threading.Thread(target=_close_quietly, args=[ws], name="socket-mode-close", daemon=True).start()
                continue
            ws.shutdown()  # dead, or refreshed too soon: no close handshake to wait for
            delay = _backoff(failures) if failures else 0.0
            log.warning("Socket Mode: connection lost (%s); reconnecting in %.1f s", outcome, delay)
            self._stopping.wait(delay)

    def _open(self) -> websocket.WebSocket:
        try:
            url = self._web.apps_connections_open(app_token=self._app_token)["url"]
        except SlackApiError as error:
            raise ConnectionError(f"apps.connections.open: {error.response.get('error', 'failed')}") from None
        ws = websocket.create_connection(url, timeout=self._connect_timeout, enable_multithread=True)
        ws.settimeout(READ_POLL_SECONDS)
        log.info("Socket Mode connected")
        return ws

    def _read(self, ws: websocket.WebSocket) -> str:
        """Read until the connection ends; says why: closed, ended, silent, refresh or stopping."""
        last_heard = last_ping = time.monotonic()
        while not self._stopping.is_set():
            try:
                opcode, data = ws.recv_data(control_frame=True)  # answers Slack's pings itself
            except websocket.WebSocketTimeoutException:
                pass
            except (websocket.WebSocketException, OSError) as error:
                return f"ended: {_describe(error)}"
            else:
                last_heard = time.monotonic()
                if opcode == websocket.ABNF.OPCODE_CLOSE:
                    return "closed by Slack"
                if opcode == websocket.ABNF.OPCODE_TEXT and self._on_text(ws, data) == "refresh":
                    return "refresh"
            now = time.monotonic()
            if now - last_heard > self._ping_interval + self._pong_timeout:
                return f"silent for {now - last_heard:.1f} s"
            if now - last_ping >= self._ping_interval:
                last_ping = now
                try:
                    ws.ping()
                except (websocket.WebSocketException, OSError) as error:
                    return f"ping failed: {_describe(error)}"
        return "stopping"

    def _on_text(self, ws: websocket.WebSocket, data: bytes) -> str | None:
        try:
            message = json.loads(data)
        except ValueError:
            log.warning("Socket Mode: ignored a message that is not JSON")
            return None
        if not isinstance(message, dict):
            return None
        kind = message.get("type")
        if kind == "disconnect":
            log.info("Socket Mode: Slack asks to reconnect (%s)", message.get("reason", "?"))
            return "refresh"
        if kind == "hello":
            log.debug("Socket Mode: hello (%s connections)", message.get("num_connections"))
            return None
        if message.get("envelope_id"):
            try:
                self._workers.submit(self._dispatch, ws, message)
            except RuntimeError:  # close() already stopped the pool: left unacked, as when the bot is down
                log.warning("Socket Mode: stopping; envelope %s not taken", message["envelope_id"])
        return None

    def _dispatch(self, ws: websocket.WebSocket, envelope: Envelope) -> None:
        try:
            payload = self._handle(envelope)
        except Exception:
            log.exception("Socket Mode: handling envelope %s failed", envelope.get("envelope_id"))
            return
        ack: dict[str, Any] = {"envelope_id": envelope["envelope_id"]}
        if payload:
            ack["payload"] = payload
        text = json.dumps(ack)
        for target in (ws, self._current):
            try:
                if target is not None:
                    target.send(text)
                    return
            except (websocket.WebSocketException, OSError):
                continue  # that connection died meanwhile: try the current one
        log.warning("Socket Mode: could not ack envelope %s: no open connection", envelope.get("envelope_id"))


def bolt_handler(app: App) -> Handle:
    """``handle`` for a Bolt app: dispatch the envelope's payload, return the ack's payload (or None)."""

    def handle(envelope: Envelope) -> dict[str, Any] | None:
        response: BoltResponse = app.dispatch(BoltRequest(mode="socket_mode", body=envelope.get("payload") or {}))
        if response.status != 200:
            log.info("Socket Mode: Bolt answered %s to a %s envelope", response.status, envelope.get("type"))
            return None
        if not response.body:
            return None
        content_type = (response.headers.get("content-type") or [""])[0]
        if content_type.startswith("application/json"):
            body: dict[str, Any] = json.loads(response.body)
            return body
        return {"text": response.body}

    return handle


def _backoff(failures: int) -> float:
    """0.5 s, 1 s, 2 s, ... up to MAX_BACKOFF_SECONDS, with jitter so replicas do not reconnect in step."""
    base = min(MAX_BACKOFF_SECONDS, 0.5 * 2 ** (failures - 1))
    return base * random.uniform(0.5, 1.0)


def _close_quietly(ws: websocket.WebSocket) -> None:
    """A close frame, at most a second's wait for Slack's, then the socket is closed either way."""
    try:
        ws.close(timeout=1)
    except Exception:  # noqa: BLE001 - closing a dead connection may fail in many ways; it is closed regardless
        ws.shutdown()


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__
