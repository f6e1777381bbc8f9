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
    "views_publish": set(),
    "auth_test": set(),
    "apps_connections_open": set(),  # Socket Mode: the app-level token's connections:write, not a bot scope
}
# Each event the bot listens to, the subscriptions that deliver it, and the scopes those need.
EVENTS = {
    "message": {"message.channels": {"channels:history"}, "message.groups": {"groups:history"}},
    "app_home_opened": {"app_home_opened": set()},
}
LISTENED = re.compile(r"@app\.event\(\"(\w+)\"\)")
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
    return (
        {"commands"}
        | {scope for call in calls for scope in SCOPES[call]}
        | {scope for subscriptions in events_the_code_handles().values() for scopes in subscriptions.values() for scope in scopes}
    )


def events_the_code_handles() -> dict[str, dict[str, set[str]]]:
    handled: set[str] = set()
    for path in (ROOT / "handlers").rglob("*.py"):
        handled |= set(LISTENED.findall(path.read_text()))
    unknown = handled - set(EVENTS)
    assert not unknown, f"new events need their subscriptions and scopes in the manifests and in EVENTS: {unknown}"
    return {event: EVENTS[event] for event in handled}


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


@pytest.mark.parametrize("manifest", ["slack-app-manifest.yaml", "slack-app-manifest.http.yaml"])
def test_manifest_subscribes_to_exactly_the_events_handled(manifest: str) -> None:
    data = yaml.safe_load((ROOT / "deploy" / manifest).read_text())
    wanted = {name for subscriptions in events_the_code_handles().values() for name in subscriptions}
    assert set(data["settings"]["event_subscriptions"]["bot_events"]) == wanted
    assert data["features"]["app_home"]["home_tab_enabled"] is True


def test_the_slack_doc_lists_every_scope_of_the_manifest() -> None:
    doc = (ROOT / "docs" / "slack.md").read_text()
    table = doc.split("Scopes and why", 1)[1].split("\nEvents", 1)[0]
    first_column = [row.split("|")[1] for row in table.splitlines() if row.startswith("| `")]
    listed = {scope for cell in first_column for scope in re.findall(r"`([a-z]+(?::[a-z]+)?)`", cell)}
    manifest = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.yaml").read_text())
    assert listed == set(manifest["oauth_config"]["scopes"]["bot"])
