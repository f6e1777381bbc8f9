"""The Slack side of the conversation: requests built and signed exactly as Slack sends them.

Used by the shell (typed commands and clicks become signed requests into the real Bolt app) and by
the integration tests (which post them over HTTP).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

from bot.adapters.slack import ids

TEAM_ID = "TSANDBOX"
APP_ID = "ASANDBOX"


class SlackSide:
    def __init__(self, *, signing_secret: str, response_url_base: str, names: dict[str, str]) -> None:
        self._secret = signing_secret.encode()
        self._response_url_base = response_url_base.rstrip("/")
        self._names = names
        self._counter = itertools.count(1)

    def sign(self, body: str, *, timestamp: int | None = None) -> dict[str, str]:
        """The headers Slack adds: ``X-Slack-Signature = v0=hex(HMAC-SHA256(secret, "v0:ts:body"))``."""
        stamp = str(timestamp if timestamp is not None else int(time.time()))
        digest = hmac.new(self._secret, f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
        return {
            # Events API deliveries are JSON; commands and interactivity payloads are form-encoded.
            "content-type": "application/json" if body.startswith("{") else "application/x-www-form-urlencoded",
            "x-slack-request-timestamp": stamp,
            "x-slack-signature": f"v0={digest}",
        }

    def slash_command(self, *, user_id: str, text: str, channel_id: str = "C0GENERAL") -> str:
        return urlencode(
            {
                "token": "legacy-verification-token",
                "team_id": TEAM_ID,
                "team_domain": "sandbox",
                "channel_id": channel_id,
                "channel_name": "general",
                "user_id": user_id,
                "user_name": self._names.get(user_id, user_id),
                "command": ids.SLASH_COMMAND,
                "text": text,
                "api_app_id": APP_ID,
                "is_enterprise_install": "false",
                "response_url": self._response_url(),
                "trigger_id": self._trigger_id(),
            }
        )

    def block_action(
        self, *, user_id: str, action_id: str, value: str, channel_id: str | None, message_ts: str | None, label: str = ""
    ) -> str:
        payload: dict[str, Any] = {
            "type": "block_actions",
            "user": {"id": user_id, "username": self._names.get(user_id, user_id), "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "token": "legacy-verification-token",
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel_id, "is_ephemeral": False},
            "trigger_id": self._trigger_id(),
            "team": {"id": TEAM_ID, "domain": "sandbox"},
            "channel": {"id": channel_id, "name": channel_id},
            "response_url": self._response_url(),
            "actions": [
                {
                    "action_id": action_id,
                    "block_id": "b",
                    "text": {"type": "plain_text", "text": label or action_id},
                    "value": value,
                    "type": "button",
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }
        return urlencode({"payload": json.dumps(payload)})

    def view_submission(self, *, user_id: str, view: dict[str, Any], values: dict[str, str]) -> str:
        """Submit ``view`` with ``values`` per input block (select and radio inputs get ``selected_option``)."""
        state: dict[str, Any] = {}
        for block in view.get("blocks", []):
            if block.get("type") != "input":
                continue
            element = block["element"]
            value = values.get(block["block_id"], "")
            if element["type"] in ("static_select", "radio_buttons"):
                option = next((o for o in element.get("options", []) if o["value"] == value), None)
                entry: dict[str, Any] = {"type": element["type"], "selected_option": option}
            else:
                entry = {"type": element["type"], "value": value or None}
            state[block["block_id"]] = {element["action_id"]: entry}
        payload = {
            "type": "view_submission",
            "team": {"id": TEAM_ID, "domain": "sandbox"},
            "user": {"id": user_id, "username": self._names.get(user_id, user_id), "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "token": "legacy-verification-token",
            "trigger_id": self._trigger_id(),
            "view": {**view, "team_id": TEAM_ID, "state": {"values": state}},
        }
        return urlencode({"payload": json.dumps(payload)})

    def event(self, event: dict[str, Any], *, event_id: str | None = None) -> str:
        """An Events API delivery (``event_callback``) as Slack posts it; pass ``event_id`` to re-send one."""
        return json.dumps(
            {
                "token": "legacy-verification-token",
                "team_id": TEAM_ID,
                "api_app_id": APP_ID,
                "event": event,
                "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._counter):08d}",
                "event_time": int(time.time()),
                "authorizations": [{"team_id": TEAM_ID, "user_id": "UBOT", "is_bot": True}],
            }
        )

    def thread_reply(self, *, user_id: str, channel_id: str, thread_ts: str, text: str) -> dict[str, Any]:
        """The ``message`` event of a person's reply in a thread (channel_type channel)."""
        return {
            "type": "message",
            "user": user_id,
            "text": text,
            "ts": f"{time.time():.6f}",
            "thread_ts": thread_ts,
            "parent_user_id": "UBOT",
            "channel": channel_id,
            "event_ts": f"{time.time():.6f}",
            "channel_type": "channel",
        }

    def home_click(self, *, user_id: str, action_id: str, value: str) -> str:
        """A button pressed on the App Home tab: a block_actions payload with a ``view`` and no response_url."""
        payload = {
            "type": "block_actions",
            "user": {"id": user_id, "username": self._names.get(user_id, user_id), "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "token": "legacy-verification-token",
            "container": {"type": "view", "view_id": "VHOME"},
            "trigger_id": self._trigger_id(),
            "team": {"id": TEAM_ID, "domain": "sandbox"},
            "view": {"id": "VHOME", "type": "home", "blocks": []},
            "actions": [{"action_id": action_id, "block_id": "b", "value": value, "type": "button"}],
        }
        return urlencode({"payload": json.dumps(payload)})

    def _response_url(self) -> str:
        return f"{self._response_url_base}/{next(self._counter)}"

    def _trigger_id(self) -> str:
        return f"{next(self._counter)}.{int(time.time())}.sandbox"
