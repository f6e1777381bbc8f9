import io
import json
import logging
from pathlib import Path

import pytest

from bot.logs import configure_logging, redact, request_context
from bot.settings import Settings, SettingsError, load_settings


@pytest.mark.parametrize(
    "secret",
    ["xoxb-123-456-abcdef", "xapp-1-A0-123-abc", "xoxp-99-88"],
)
def test_slack_tokens_are_masked(secret: str) -> None:
    assert secret not in redact(f"call failed with token={secret} here")


def test_bearer_tokens_and_url_passwords_are_masked() -> None:
    text = redact("Authorization: Bearer abc.def-ghi and postgresql://bot:s3cret@db:5432/x")
    assert "abc.def-ghi" not in text and "s3cret" not in text and "postgresql://bot:" in text


def test_json_lines_carry_the_request_id_and_never_a_token() -> None:
    stream = io.StringIO()
    configure_logging(level="INFO", fmt="json", stream=stream)
    try:
        log = logging.getLogger("bot.test")
        with request_context("GQ-17"):
            log.info("patched with xoxb-1-2-secret")
        log.info("outside")
    finally:
        configure_logging(level="WARNING", fmt="text")
    first, second = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert first["request_id"] == "GQ-17" and "xoxb-1-2-secret" not in first["message"]
    assert "request_id" not in second


def test_the_slack_sdk_never_logs_headers_at_debug() -> None:
    configure_logging(level="DEBUG", fmt="text", stream=io.StringIO())
    try:
        assert logging.getLogger("slack_sdk").getEffectiveLevel() >= logging.INFO
    finally:
        configure_logging(level="WARNING", fmt="text")


def test_runtime_problems_name_each_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "GPU_QUOTA_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    problems = Settings().runtime_problems()
    assert [p.split()[0] for p in problems] == ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "GPU_QUOTA_CONFIG"]


def test_wrong_token_kinds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxp-user-token")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xoxb-not-an-app-token")
    monkeypatch.setenv("GPU_QUOTA_CONFIG", str(tmp_path / "policy.yaml"))
    problems = " ".join(Settings().runtime_problems())
    assert "must start with xoxb-" in problems and "must start with xapp-" in problems
    assert "xoxp-user-token" not in problems and "xoxp-user-token" not in repr(Settings())


def test_bad_values_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "0")
    monkeypatch.setenv("SLACK_API_URL", "slack.example")
    with pytest.raises(SettingsError) as error:
        load_settings()
    assert "PORT" in str(error.value) and "SLACK_API_URL" in str(error.value)


def test_api_url_gets_its_trailing_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_API_URL", "https://slack-gov.com/api")
    assert Settings().slack_api_url == "https://slack-gov.com/api/"
