"""Slack over HTTP: build Bolt requests (with one parsing fix), and the service's WSGI application.

Bolt decides a form body is an interactivity payload when the raw text contains the word
"payload" anywhere; a slash command like ``/gpu-quota request ns +1 for 1d payload tests`` then
parses to an empty body and is silently dropped. ``bolt_request`` re-parses such bodies as the
slash command they are. The signature is still checked by Bolt on the untouched raw body.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from slack_bolt import App, BoltRequest
from slack_bolt.context.context import BoltContext
from slack_bolt.request.internals import build_context

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
MAX_BODY_BYTES = 1 << 20


def bolt_request(raw_body: str, headers: Mapping[str, str | Sequence[str]], query: str = "") -> BoltRequest:
    request = BoltRequest(body=raw_body, headers=dict(headers), query=query)
    if not request.body and raw_body and not raw_body.lstrip().startswith("{"):
        form = dict(parse_qsl(raw_body, keep_blank_values=True))
        if "command" in form and "payload" not in form:
            request.body = form
            request.context = build_context(BoltContext({}), form)
    return request


class WebApp:
    """WSGI: ``/healthz`` (alive), ``/readyz`` (can serve), ``/metrics``, and ``POST /slack/events`` to Bolt.

    Without a Bolt app (Socket Mode) there is no Slack route at all: ``/slack/events`` is 404, so
    nothing that reaches the pod's port can act as a Slack user, whatever it is signed with.
    """

    def __init__(
        self,
        bolt_app: App | None,
        *,
        ready: Callable[[], bool] = lambda: True,
        metrics: Callable[[], tuple[bytes, str]] | None = None,
    ) -> None:
        self._bolt = bolt_app
        self._ready = ready
        self._metrics = metrics

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
        if path == EVENTS_PATH and method == "POST" and self._bolt is not None:
            return self._slack(environ, start_response, self._bolt)
        if path == "/healthz":
            return _reply(start_response, 200, b"ok\n")
        if path == "/readyz":
            ready = self._safe_ready()
            return _reply(start_response, 200 if ready else 503, b"ready\n" if ready else b"not ready\n")
        if path == "/metrics" and self._metrics is not None:
            body, content_type = self._metrics()
            return _reply(start_response, 200, body, content_type)
        return _reply(start_response, 404, b"not found\n")

    def _slack(self, environ: dict[str, Any], start_response: Callable[..., Any], bolt: App) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY_BYTES:
            return _reply(start_response, 413, b"too large\n")
        raw = environ["wsgi.input"].read(length).decode("utf-8", errors="replace") if length else ""
        headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        response = bolt.dispatch(bolt_request(raw, headers, environ.get("QUERY_STRING", "")))
        if response.status == 401:
            log.warning("rejected a Slack request with a bad or stale signature from %s", environ.get("REMOTE_ADDR", "?"))
        out_headers = [(name, value) for name, values in response.headers.items() for value in values]
        start_response(_status(response.status), out_headers)
        return [response.body.encode("utf-8")]

    def _safe_ready(self) -> bool:
        try:
            return self._ready()
        except Exception:
            log.exception("readiness check failed")
            return False


def _status(code: int) -> str:
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"{code} Unknown"


def _reply(
    start_response: Callable[..., Any], code: int, body: bytes, content_type: str = "text/plain; charset=utf-8"
) -> list[bytes]:
    start_response(_status(code), [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]
