"""A Slack Web API stand-in that records what the bot sends, for the shell and the tests.

It answers the methods the bot uses (``chat.postMessage``, ``chat.update``, ``chat.delete``, ``conversations.open``,
``views.open``/``update``, ``usergroups.users.list``, ``auth.test``, the three-step file upload)
and ``response_url`` posts, keeps the resulting messages (threads included), and can be told to
fail a method the way Slack does (``{"ok": false, "error": ...}``, HTTP 429 with Retry-After, HTTP
5xx), one failure after the other, to drop a call's connection without an answer, or to answer
late. Like Slack it keeps HTTP/1.1 connections alive (``connections`` counts them), speaks HTTPS
when given a ``tls`` server context, and stores text exactly as sent: it never unescapes ``&lt;``,
so what the tests read is what a Slack client would parse.
"""

from __future__ import annotations

import itertools
import json
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.sandbox.httpserver import Incoming, LoopbackServer, Outgoing
from bot.sandbox.socket_mode import SocketModeStandIn


@dataclass
class Recorded:
    """One thing the bot made appear in Slack, in order."""

    seq: int
    kind: str  # message | update | delete | response | view_open | view_update | file
    channel: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    view: dict[str, Any] | None = None
    response_url: str | None = None
    filename: str | None = None
    content: bytes = b""


@dataclass
class _Failure:
    error: str
    status: int
    times: int
    retry_after: int | None
    channel: str | None = None  # only calls about this channel fail


@dataclass
class Hold:
    """One call of a method that Slack carries out but answers only when ``release()`` is called."""

    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.released.set()


class SlackApiStandIn:
    def __init__(
        self,
        *,
        token: str = "xoxb-sandbox-token",
        users: dict[str, str] | None = None,
        channels: dict[str, str] | None = None,
        usergroups: dict[str, list[str]] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.token = token
        self.users = dict(users or {})
        # Each person's Slack language (users.info gives it with include_locale); Slack's default is en-US.
        self.locales: dict[str, str] = {}
        self.channels = dict(channels or {})
        self.usergroups = {k: list(v) for k, v in (usergroups or {}).items()}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.records: list[Recorded] = []
        self.messages: dict[tuple[str, str], Recorded] = {}
        self.views: dict[str, dict[str, Any]] = {}
        self.homes: dict[str, dict[str, Any]] = {}  # user id -> the App Home view published for them
        self._uploads: dict[str, dict[str, Any]] = {}
        self._failures: dict[str, deque[_Failure]] = {}
        self._holds: dict[str, Hold] = {}
        self._drops: set[str] = set()
        self._seq = itertools.count(1)
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._handle, tls=tls)
        self.socket_mode: SocketModeStandIn | None = None  # serves apps.connections.open when set

    # --- lifecycle and test controls -------------------------------------------------------

    def start(self) -> SlackApiStandIn:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    @property
    def connections(self) -> int:
        """HTTP connections the bot opened to this Slack (kept alive between calls, as Slack does)."""
        return self._server.connections

    def refuse_connections(self) -> None:
        """Slack goes out of reach: connections are refused, kept-alive ones close, until ``accept_connections()``."""
        self._server.refuse()

    def accept_connections(self) -> None:
        self._server.resume()

    def drop_next(self, method: str) -> None:
        """The next call of ``method`` is read, then its connection is closed without an answer."""
        with self._lock:
            self._drops.add(method)

    @property
    def api_url(self) -> str:
        return self._server.url + "/api/"

    def response_url(self, key: str) -> str:
        return f"{self._server.url}/respond/{key}"

    def fail(
        self,
        method: str,
        error: str,
        *,
        status: int = 200,
        times: int = 1,
        retry_after: int | None = None,
        channel: str | None = None,
    ) -> None:
        """Make the next ``times`` calls of ``method`` (about ``channel`` only, when given) fail like Slack
        would, after failures already set."""
        with self._lock:
            self._failures.setdefault(method, deque()).append(_Failure(error, status, times, retry_after, channel))

    def hold(self, method: str) -> Hold:
        """The next call of ``method`` takes effect at once but is answered only on ``release()``."""
        hold = Hold()
        with self._lock:
            self._holds[method] = hold
        return hold

    def wait_for(self, condition: Callable[[], bool], *, timeout: float) -> bool:
        """Wait until ``condition()`` holds (checked under the lock); False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if condition():
                    return True
            time.sleep(0.01)
        return False

    def since(self, seq: int) -> list[Recorded]:
        with self._lock:
            return [r for r in self.records if r.seq > seq]

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [params for name, params in self.calls if name == method]

    def thread(self, channel: str, ts: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.records if r.kind == "message" and r.channel == channel and r.thread_ts == ts]

    # --- HTTP ------------------------------------------------------------------------------

    def _handle(self, incoming: Incoming) -> Outgoing | None:
        if incoming.path.startswith("/respond/"):
            return self._respond(incoming)
        if incoming.path.startswith("/upload/"):
            return self._receive_upload(incoming)
        if not incoming.path.startswith("/api/"):
            return Outgoing(404, b"not found")
        method = incoming.path[len("/api/") :]
        params = _params(incoming)
        with self._lock:
            self.calls.append((method, params))
            if method in self._drops:
                self._drops.discard(method)
                return None
            failures = self._failures.get(method) or deque()
            failure = next((f for f in failures if f.channel in (None, params.get("channel"))), None)
            if failure is not None:
                failure.times -= 1
                if failure.times <= 0:
                    failures.remove(failure)
                headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
                return Outgoing.json(failure.status, {"ok": False, "error": failure.error}, headers)
        if method == "apps.connections.open":
            return Outgoing.json(200, self._apps_connections_open(incoming))
        if incoming.headers.get("authorization") != f"Bearer {self.token}" and params.get("token") != self.token:
            return Outgoing.json(200, {"ok": False, "error": "invalid_auth"})
        handler = getattr(self, "_api_" + method.replace(".", "_"), None)
        if handler is None:
            return Outgoing.json(200, {"ok": False, "error": "unknown_method"})
        with self._lock:
            answer = handler(params)
            hold = self._holds.pop(method, None)
        if hold is not None:
            hold.reached.set()
            hold.released.wait(timeout=60)  # a test that never releases must not hang the server
        return Outgoing.json(200, answer)

    def _respond(self, incoming: Incoming) -> Outgoing:
        payload = incoming.json() or {}
        with self._lock:
            self.records.append(
                Recorded(
                    seq=next(self._seq),
                    kind="response",
                    text=payload.get("text", ""),
                    blocks=_blocks(payload.get("blocks")),
                    response_url=incoming.path,
                )
            )
        return Outgoing(200, b"ok")

    def _receive_upload(self, incoming: Incoming) -> Outgoing:
        file_id = incoming.path.rsplit("/", 1)[-1]
        with self._lock:
            if file_id not in self._uploads:
                return Outgoing(404, b"unknown upload")
            self._uploads[file_id]["content"] = incoming.body
        return Outgoing(200, b"OK")

    # --- methods ---------------------------------------------------------------------------

    def _apps_connections_open(self, incoming: Incoming) -> dict[str, Any]:
        """Socket Mode: a WebSocket URL, for an app-level token only (Slack refuses bot tokens here)."""
        if not incoming.headers.get("authorization", "").startswith("Bearer xapp-"):
            return {"ok": False, "error": "not_allowed_token_type"}
        if self.socket_mode is None:
            return {"ok": False, "error": "not_allowed"}
        return {"ok": True, "url": self.socket_mode.url()}

    def _api_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "user_id": "UBOT", "bot_id": "BBOT", "team": "Sandbox", "team_id": "TSANDBOX"}

    def _api_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel", ""))
        if not (channel in self.channels or channel.startswith("D")):
            return {"ok": False, "error": "channel_not_found"}
        thread_ts = params.get("thread_ts")
        if thread_ts and (channel, thread_ts) not in self.messages:
            return {"ok": False, "error": "thread_not_found"}
        ts = f"{int(time.time())}.{next(self._ts):06d}"
        record = Recorded(
            seq=next(self._seq),
            kind="message",
            channel=channel,
            ts=ts,
            thread_ts=thread_ts,
            text=str(params.get("text", "")),
            blocks=_blocks(params.get("blocks")),
        )
        self.records.append(record)
        self.messages[(channel, ts)] = record
        return {"ok": True, "channel": channel, "ts": ts, "message": {"text": record.text}}

    def _api_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel")), str(params.get("ts")))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        original = self.messages[key]
        original.text = str(params.get("text", original.text))
        original.blocks = _blocks(params.get("blocks")) or original.blocks
        self.records.append(
            Recorded(seq=next(self._seq), kind="update", channel=key[0], ts=key[1], text=original.text, blocks=original.blocks)
        )
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _api_chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel")), str(params.get("ts")))
        if self.messages.pop(key, None) is None:
            return {"ok": False, "error": "message_not_found"}
        self.records.append(Recorded(seq=next(self._seq), kind="delete", channel=key[0], ts=key[1]))
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _api_conversations_open(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("users", ""))
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "channel": {"id": "D" + user}}

    def _api_usergroups_users_list(self, params: dict[str, Any]) -> dict[str, Any]:
        group = str(params.get("usergroup", ""))
        if group not in self.usergroups:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": self.usergroups[group]}

    def _api_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("user", ""))
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        found: dict[str, Any] = {"id": user, "name": self.users[user], "deleted": False}
        if str(params.get("include_locale", "")).lower() in ("true", "1"):  # Slack adds it only when asked
            found["locale"] = self.locales.get(user, "en-US")
        return {"ok": True, "user": found}

    def _api_conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel", ""))
        if channel not in self.channels:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": {"id": channel, "name": self.channels[channel], "is_member": True}}

    def _api_views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        view = _view(params.get("view"))
        view_id = f"V{next(self._seq)}"
        view["id"] = view_id
        self.views[view_id] = view
        self.records.append(Recorded(seq=next(self._seq), kind="view_open", view=view))
        return {"ok": True, "view": view}

    def _api_views_update(self, params: dict[str, Any]) -> dict[str, Any]:
        view_id = str(params.get("view_id", ""))
        if view_id not in self.views:
            return {"ok": False, "error": "not_found"}
        view = _view(params.get("view"))
        view["id"] = view_id
        self.views[view_id] = view
        self.records.append(Recorded(seq=next(self._seq), kind="view_update", view=view))
        return {"ok": True, "view": view}

    def _api_views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("user_id", ""))
        view = _view(params.get("view"))
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        if view.get("type") != "home":
            return {"ok": False, "error": "invalid_arguments"}
        view["id"] = f"V{next(self._seq)}"
        self.homes[user] = view
        self.records.append(Recorded(seq=next(self._seq), kind="home", channel=user, view=view))
        return {"ok": True, "view": view}

    def _api_files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        file_id = f"F{next(self._seq)}"
        self._uploads[file_id] = {"filename": params.get("filename"), "length": int(params.get("length", 0))}
        return {"ok": True, "upload_url": f"{self._server.url}/upload/{file_id}", "file_id": file_id}

    def _api_files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        files = params.get("files")
        files = json.loads(files) if isinstance(files, str) else files or []
        channel = params.get("channel_id")
        done = []
        for entry in files:
            upload = self._uploads.get(entry["id"])
            if upload is None or "content" not in upload:
                return {"ok": False, "error": "file_not_found"}
            self.records.append(
                Recorded(
                    seq=next(self._seq),
                    kind="file",
                    channel=channel,
                    thread_ts=params.get("thread_ts"),
                    text=str(params.get("initial_comment", "")),
                    filename=upload["filename"],
                    content=upload["content"],
                )
            )
            done.append({"id": entry["id"], "title": entry.get("title")})
        return {"ok": True, "files": done}


def _params(incoming: Incoming) -> dict[str, Any]:
    params: dict[str, Any] = dict(incoming.query)
    content_type = incoming.headers.get("content-type", "")
    if incoming.body:
        if "json" in content_type:
            params.update(incoming.json() or {})
        elif "form" in content_type:
            params.update(incoming.form())
    return params


def _blocks(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        value = json.loads(value)
    return list(value or [])


def _view(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value or {})
