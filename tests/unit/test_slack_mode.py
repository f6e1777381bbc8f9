"""Which Slack mode the bot runs in, what each mode requires, and that Socket Mode has no Slack route."""

from __future__ import annotations

import io
from typing import Any

import pytest
from slack_bolt import App

from bot.adapters.slack.http import WebApp
from bot.settings import Settings, SettingsError, load_settings

REAL_LOOKING_SECRET = "8f14e45fceea167a5a36dedd4bea2543"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1-2-3")
    monkeypatch.setenv("GPU_QUOTA_CONFIG", str(tmp_path / "policy.yaml"))


def test_the_mode_follows_the_app_token_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().mode == "http"
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-A-1-x")
    assert Settings().mode == "socket"
    monkeypatch.setenv("SLACK_MODE", " HTTP ")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", REAL_LOOKING_SECRET)
    assert Settings().mode == "http" and Settings().runtime_problems() == []


def test_socket_mode_needs_no_signing_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-A-1-x")
    assert Settings().runtime_problems() == []


def test_socket_mode_without_an_app_token_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_MODE", "socket")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", REAL_LOOKING_SECRET)
    problems = Settings().runtime_problems()
    assert len(problems) == 1 and problems[0].startswith("SLACK_APP_TOKEN is not set")


@pytest.mark.parametrize(
    "secret",
    ["changeme", "CHANGE-ME", "unused-in-socket-mode", "xxx", "XXXXXXXXXXXXXXXX", "...", "<signing secret>", "${SECRET}"],
)
def test_placeholder_signing_secrets_are_refused_without_being_quoted(monkeypatch: pytest.MonkeyPatch, secret: str) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", secret)
    problems = Settings().runtime_problems()
    assert len(problems) == 1 and problems[0].startswith("SLACK_SIGNING_SECRET is a placeholder")
    assert secret not in problems[0].replace("SLACK_SIGNING_SECRET", "")


def test_an_unknown_mode_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_MODE", "websocket")
    with pytest.raises(SettingsError) as error:
        load_settings()
    assert str(error.value).startswith("SLACK_MODE:")


def _call(app: WebApp, method: str, path: str) -> tuple[str, bytes]:
    status: list[str] = []
    body = b"".join(
        app(
            {"REQUEST_METHOD": method, "PATH_INFO": path, "CONTENT_LENGTH": "0", "wsgi.input": io.BytesIO()},
            lambda code, headers: status.append(code),
        )
    )
    return status[0], body


def test_without_a_bolt_app_there_is_no_slack_route() -> None:
    web = WebApp(None, metrics=lambda: (b"up 1\n", "text/plain"))
    assert _call(web, "POST", "/slack/events")[0].startswith("404")
    assert _call(web, "GET", "/healthz")[0].startswith("200")
    assert _call(web, "GET", "/readyz")[0].startswith("200")
    assert _call(web, "GET", "/metrics") == ("200 OK", b"up 1\n")


def test_with_a_bolt_app_slack_requests_reach_it() -> None:
    bolt = App(signing_secret=REAL_LOOKING_SECRET, token="xoxb-1", token_verification_enabled=False)
    assert _call(WebApp(bolt), "POST", "/slack/events")[0].startswith("401")  # Bolt checks the signature
