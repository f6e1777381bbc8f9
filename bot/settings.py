"""Settings from the environment (pydantic-settings). Secrets are ``SecretStr``: never printed, never logged."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
SlackMode = Literal["socket", "http"]

# Values people leave in a Secret when they mean "fill in later": never a real signing secret.
PLACEHOLDER_SECRETS = frozenset(
    {
        "changeme",
        "change-me",
        "change_me",
        "unused-in-socket-mode",
        "secret",
        "signing-secret",
        "signing_secret",
        "your-signing-secret",
        "slack-signing-secret",
        "placeholder",
        "example",
        "todo",
        "tbd",
        "none",
        "null",
        "test",
        "dummy",
    }
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    slack_bot_token: SecretStr | None = Field(default=None, description="Bot token, `xoxb-...` (required).")
    slack_signing_secret: SecretStr | None = Field(
        default=None,
        description=(
            "Verifies HTTP requests from Slack; empty or a placeholder (`changeme`, `xxx`, ...) stops start-up"
            " (required in HTTP mode)."
        ),
    )
    slack_app_token: SecretStr | None = Field(
        default=None, description="App-level token `xapp-...` (`connections:write`): Socket Mode (required in Socket Mode)."
    )
    slack_mode: SlackMode | None = Field(
        default=None,
        description=(
            "`socket` (a WebSocket the bot opens: no public URL, no Slack route over HTTP) or `http` (Slack calls"
            " `POST /slack/events`); unset: `socket` when `SLACK_APP_TOKEN` is set, else `http`."
        ),
    )
    slack_socket_ping_seconds: float = Field(
        default=2.0,
        ge=0.5,
        le=30,
        description="Socket Mode: ping Slack this often; a connection silent for twice as long is replaced.",
    )
    slack_api_url: str = Field(default=DEFAULT_SLACK_API_URL, description="Slack Web API base URL (GovSlack, a proxy, tests).")
    database_url: str = Field(
        default="sqlite:///gpu-quota-bot.db", description="SQLAlchemy URL; `postgresql://...` uses psycopg 3."
    )
    gpu_quota_config: Path | None = Field(default=None, description="The policy file (required): see below.")
    kubeconfig: Path | None = Field(
        default=None, description="Kubeconfig path; without it, `~/.kube/config`, else in-cluster config."
    )
    port: int = Field(
        default=3000, ge=1, le=65535, description="`/healthz`, `/readyz`, `/metrics`; in HTTP mode also `/slack/events`."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(default="INFO", description="The log level.")
    log_format: Literal["json", "text"] = Field(
        default="json", description="`json` (one object a line, request id included) or `text`."
    )
    prometheus_url: str | None = Field(
        default=None,
        description=(
            "Prometheus for digests, budgets and nudges (none of them without it); Thanos Query, Grafana Mimir or"
            " VictoriaMetrics work too (their Prometheus-compatible query endpoint)."
        ),
    )
    prometheus_bearer_token: SecretStr | None = Field(default=None, description="Auth for a Prometheus behind a proxy.")
    prometheus_username: str | None = Field(
        default=None, description="Auth for a Prometheus behind a proxy, with `PROMETHEUS_PASSWORD`."
    )
    prometheus_password: SecretStr | None = Field(default=None, description="The password for `PROMETHEUS_USERNAME`.")
    prometheus_ca_bundle: Path | None = Field(
        default=None, description="CA bundle file for an https Prometheus with a private CA."
    )
    prometheus_timeout_seconds: float = Field(
        default=120.0, gt=0, le=600, description="Per query (a month of a large cluster takes tens of seconds)."
    )
    reconcile_interval_seconds: int = Field(
        default=30, ge=5, le=3600, description="Expiry, reminders, grant ends, retries, outbox delivery."
    )
    sweep_interval_seconds: int = Field(
        default=600, ge=60, le=86400, description="Converge every managed namespace (adopts hand edits)."
    )
    leader_check_seconds: float = Field(
        default=2.0, gt=0, le=60, description="How often a replica checks or tries for the leadership."
    )

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

    @field_validator("slack_mode", mode="before")
    @classmethod
    def _mode(cls, mode: str | None) -> str | None:
        return (mode.strip().lower() or None) if isinstance(mode, str) else mode

    @property
    def mode(self) -> SlackMode:
        """How Slack reaches the bot: SLACK_MODE, else Socket Mode exactly when an app token is set."""
        if self.slack_mode is not None:
            return self.slack_mode
        return "socket" if self.slack_app_token and self.slack_app_token.get_secret_value() else "http"

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
        if self.mode == "socket" and not app_token:
            problems.append("SLACK_APP_TOKEN is not set: Socket Mode (SLACK_MODE=socket) needs it (xapp-..., connections:write)")
        if self.mode == "http":
            problem = _signing_secret_problem(self.slack_signing_secret.get_secret_value() if self.slack_signing_secret else "")
            if problem:
                problems.append(f"SLACK_SIGNING_SECRET {problem}")
        if self.gpu_quota_config is None:
            problems.append("GPU_QUOTA_CONFIG is not set: point it at the policy file (see deploy/config.example.yaml)")
        return problems


def _signing_secret_problem(secret: str) -> str | None:
    """Why ``secret`` cannot be the app's signing secret (never quoting it), or None."""
    value = secret.strip().lower()
    if not value:
        return "is not set: HTTP mode needs it (or set SLACK_APP_TOKEN for Socket Mode)"
    if value in PLACEHOLDER_SECRETS or len(set(value)) == 1 or "..." in value or value.startswith(("<", "${")):
        return "is a placeholder: put the app's Signing Secret (Basic Information > App Credentials) in it"
    return None


def load_settings() -> Settings:
    """Read the environment; raises SettingsError naming each bad variable."""
    try:
        return Settings()
    except ValidationError as error:
        lines = [f"{str(e['loc'][0]).upper()}: {e['msg']}" for e in error.errors()]
        raise SettingsError("\n".join(lines)) from None


class SettingsError(Exception):
    pass
