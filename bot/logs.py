"""Logging: JSON lines (or plain text), the request id on every line of a request's life, secrets masked."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TextIO

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
# Slack tokens (xoxb-, xoxp-, xapp-, ...), bearer headers and passwords in URLs.
_SECRETS = [
    re.compile(r"\bx(?:ox[abposr]|app)-[A-Za-z0-9-]+"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"(://[^:/@\s]+:)[^@\s]+(@)"),
]


def redact(text: str) -> str:
    text = _SECRETS[0].sub("[redacted]", text)
    text = _SECRETS[1].sub(r"\1[redacted]", text)
    return _SECRETS[2].sub(r"\1[redacted]\2", text)


@contextmanager
def request_context(request_id: str) -> Iterator[None]:
    """Tag every log line inside with ``request_id`` (e.g. GQ-17)."""
    token = _request_id.set(request_id)
    try:
        yield
    finally:
        _request_id.reset(token)


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        request_id = getattr(record, "request_id", None)
        if request_id:
            entry["request_id"] = request_id
        if record.exc_info:
            entry["traceback"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = redact(super().format(record))
        request_id = getattr(record, "request_id", None)
        return f"{text} [{request_id}]" if request_id else text


def configure_logging(*, level: str = "INFO", fmt: str = "json", stream: TextIO | None = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The Slack SDK logs request headers (with the token) at DEBUG: keep it at INFO at most. It guards
    # those lines with each logger's own ``level``, not the effective one, so the loggers it writes to
    # are set too: left NOTSET, they format every request and response body only to drop it.
    for name in ("slack_sdk", "slack_sdk.web.base_client", "slack_sdk.webhook.client"):
        logging.getLogger(name).setLevel(max(logging.INFO, root.level))
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
