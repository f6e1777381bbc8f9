"""Settings from the environment (pydantic-settings). Secrets are ``SecretStr``: never printed, never logged."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_SLACK_API_URL = "https://slack.com/api/"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_url: str = DEFAULT_SLACK_API_URL
    database_url: str = "sqlite:///gpu-quota-bot.db"
    gpu_quota_config: Path | None = None
    kubeconfig: Path | None = None
    port: int = Field(default=3000, ge=1, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "text"] = "json"
    prometheus_url: str | None = None
    prometheus_bearer_token: SecretStr | None = None
    prometheus_username: str | None = None
    prometheus_password: SecretStr | None = None
    prometheus_ca_bundle: Path | None = None
    prometheus_timeout_seconds: float = Field(default=120.0, gt=0, le=600)
    reconcile_interval_seconds: int = Field(default=30, ge=5, le=3600)
    sweep_interval_seconds: int = Field(default=600, ge=60, le=86400)
    leader_check_seconds: float = Field(default=2.0, gt=0, le=60)

    @field_validator("slack_api_url")
    @classmethod
    def _api_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL, e.g. https://slack.com/api/")
        return url if url.endswith("/") else url + "/"

    @field_validator("prometheus_url")
    @classmethod
    def _prometheus_url(cls, url: str | None) -> str | None:
        if url and not url.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL, e.g. http://prometheus-operated.monitoring:9090")
        return url.rstrip("/") if url else None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, level: str) -> str:
        return level.upper() if isinstance(level, str) else level

    def runtime_problems(self) -> list[str]:
        """What stops ``run`` from serving Slack, one line per setting (values are never shown)."""
        problems = []
        token = self.slack_bot_token.get_secret_value() if self.slack_bot_token else ""
        if not token:
            problems.append("SLACK_BOT_TOKEN is not set (the bot token, xoxb-...)")
        elif not token.startswith("xoxb-"):
            problems.append("SLACK_BOT_TOKEN does not look like a bot token: it must start with xoxb-")
        app_token = self.slack_app_token.get_secret_value() if self.slack_app_token else ""
        if app_token and not app_token.startswith("xapp-"):
            problems.append("SLACK_APP_TOKEN must start with xapp- (an app-level token with connections:write)")
        if not app_token and not (self.slack_signing_secret and self.slack_signing_secret.get_secret_value()):
            problems.append("SLACK_SIGNING_SECRET is not set: HTTP mode needs it (or set SLACK_APP_TOKEN for Socket Mode)")
        if self.gpu_quota_config is None:
            problems.append("GPU_QUOTA_CONFIG is not set: point it at the policy file (see deploy/config.example.yaml)")
        return problems


def load_settings() -> Settings:
    """Read the environment; raises SettingsError naming each bad variable."""
    try:
        return Settings()
    except ValidationError as error:
        lines = [f"{str(e['loc'][0]).upper()}: {e['msg']}" for e in error.errors()]
        raise SettingsError("\n".join(lines)) from None


class SettingsError(Exception):
    pass
