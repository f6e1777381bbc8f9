"""The Slack app manifests ask for exactly the scopes of the Web API methods the code calls."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
# Each Slack Web API method the bot calls, and the bot-token scopes it needs.
SCOPES = {
    "chat_postMessage": {"chat:write"},
    "chat_update": {"chat:write"},
    "conversations_open": {"im:write"},
    "usergroups_users_list": {"usergroups:read"},
    "files_upload_v2": {"files:write"},
    "users_info": {"users:read"},
    "conversations_info": {"channels:read", "groups:read"},
    "views_open": set(),
    "views_update": set(),
    "auth_test": set(),
    "apps_connections_open": set(),  # Socket Mode: the app-level token's connections:write, not a bot scope
}
# A WebClient method, called or passed: client.chat_postMessage(...), partial(client.users_info, ...), ...
SLACK_CALL = re.compile(
    r"client\.((?:admin|apps|auth|bookmarks|chat|conversations|dnd|emoji|files|pins|reactions|reminders|search|stars|team"
    r"|usergroups|users|views)_\w+)\b"
)


def scopes_the_code_needs() -> set[str]:
    calls: set[str] = set()
    for path in [*(ROOT / "bot").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")]:
        calls |= set(SLACK_CALL.findall(path.read_text()))
    unknown = calls - set(SCOPES)
    assert not unknown, f"new Slack methods need their scopes in the manifests and in SCOPES: {unknown}"
    return {"commands"} | {scope for call in calls for scope in SCOPES[call]}


@pytest.mark.parametrize("manifest", ["slack-app-manifest.yaml", "slack-app-manifest.http.yaml"])
def test_manifest_scopes_are_exactly_the_ones_used(manifest: str) -> None:
    data = yaml.safe_load((ROOT / "deploy" / manifest).read_text())
    assert set(data["oauth_config"]["scopes"]["bot"]) == scopes_the_code_needs()
    assert data["features"]["slash_commands"][0]["command"] == "/gpu-quota"
    assert data["settings"]["interactivity"]["is_enabled"] is True


def test_socket_mode_and_http_variants() -> None:
    socket = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.yaml").read_text())
    http = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.http.yaml").read_text())
    assert socket["settings"]["socket_mode_enabled"] is True and "url" not in socket["features"]["slash_commands"][0]
    assert http["settings"]["socket_mode_enabled"] is False
    assert http["features"]["slash_commands"][0]["url"].endswith("/slack/events")
    assert http["settings"]["interactivity"]["request_url"].endswith("/slack/events")
