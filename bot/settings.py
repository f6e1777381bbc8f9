"""Settings from the environment (pydantic-settings). Secrets are ``SecretStr``: never printed, never logged."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.adapters.mail.url import SmtpServer, parse_smtp_url

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
    # Errors never quote a value: a malformed secret (or a URL holding one) must not reach a log or a terminal.
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore", hide_input_in_errors=True)

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
    smtp_url: str | None = Field(
        default=None,
        description=(
            "The mail server for budget warnings and the monthly close (`budget.mail`): `smtp://user@host:587` (STARTTLS,"
            " required), `smtps://user@host:465` (TLS from the start) or `smtp://relay:25?starttls=off` (no TLS, no login);"
            " `?from=<address>` sets the From (default: the user, written `name%40example.com` when it is an address)."
            " No password in it: see `SMTP_PASSWORD`. Unset: no mail. See docs/costs.md."
        ),
    )
    smtp_password: SecretStr | None = Field(default=None, description="The password of `SMTP_URL`'s user (from a Secret).")
    smtp_ca_bundle: Path | None = Field(
        default=None, description="CA bundle file for a mail server whose certificate a private CA signed."
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

    @field_validator("smtp_url")
    @classmethod
    def _smtp_url(cls, url: str | None) -> str | None:
        if url is None or not url.strip():
            return None
        parse_smtp_url(url)  # its ValueError says what is wrong, never quoting a password
        return url.strip()

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

    def smtp_server(self) -> SmtpServer | None:
        """The mail server, with its password and CA bundle; None without SMTP_URL."""
        if self.smtp_url is None:
            return None
        password = self.smtp_password if self.smtp_password and self.smtp_password.get_secret_value() else None
        return parse_smtp_url(self.smtp_url).with_secrets(password=password, ca_bundle=self.smtp_ca_bundle)

    def mail_problems(self) -> list[str]:
        """What keeps mail from being sent, one line per setting (the password is never shown). These do not stop
        ``run``: Slack is served, and the mail waits in the outbox, then is given up."""
        server = self.smtp_server()
        has_password = bool(self.smtp_password and self.smtp_password.get_secret_value())
        if server is None:
            return ["SMTP_PASSWORD is set but SMTP_URL is not: set SMTP_URL too, or unset it"] if has_password else []
        if server.user and not has_password:
            return [f"SMTP_URL names the user {server.user} but SMTP_PASSWORD is not set"]
        if has_password and not server.user:
            return ["SMTP_PASSWORD is set but SMTP_URL names no user to log in as (smtp://user@host:587)"]
        if self.smtp_ca_bundle is not None and not self.smtp_ca_bundle.is_file():
            return [f"SMTP_CA_BUNDLE {self.smtp_ca_bundle} is not a file"]
        return []

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
