"""A real SMTP server on loopback (aiosmtpd) for the mail tests: STARTTLS required and AUTH (PLAIN, LOGIN)
only after it, as a submission server runs them; or implicit TLS (smtps), or neither (a plain relay).

It keeps what it accepted (``received``: each mail parsed, with its envelope), refuses the recipients
``refuse`` names with the reply given (``550 ...``, ``451 ...``), refuses any login but ``user`` with
``password`` (535), and can be stopped and started again on the same port (an outage).
"""

from __future__ import annotations

import email
import socket
import ssl
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import default
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from bot.adapters.mail.url import SmtpServer, parse_smtp_url
from bot.sandbox.certificate import Certificate


@dataclass(frozen=True)
class Received:
    sender: str
    recipients: tuple[str, ...]
    message: EmailMessage
    login: str | None  # who logged in for it

    @property
    def subject(self) -> str:
        """The Subject unfolded (a long one arrives folded onto its second line: "Subject:\\r\\n GPU cost...")."""
        return " ".join(str(self.message["Subject"]).split())

    @property
    def text(self) -> str:
        body = self.message.get_body(("plain",))
        assert body is not None
        return str(body.get_content())  # type: ignore[attr-defined]

    @property
    def attachments(self) -> list[tuple[str, str, bytes]]:
        """(file name, content type, bytes) of each attachment."""
        return [
            (str(part.get_filename()), part.get_content_type(), part.get_payload(decode=True))  # type: ignore[misc]
            for part in self.message.iter_attachments()
        ]


class Handler:
    def __init__(self, server: MailServer) -> None:
        self._server = server

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]) -> str:  # noqa: N802
        refusal = self._server.refuse.get(address)
        if refusal is not None:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message = email.message_from_bytes(envelope.original_content or envelope.content, policy=default)
        assert isinstance(message, EmailMessage)
        login = session.auth_data.login.decode() if session.auth_data is not None else None
        self._server.keep(Received(envelope.mail_from, tuple(envelope.rcpt_tos), message, login))
        return "250 Message accepted for delivery"


class MailServer:
    """``mode``: ``starttls`` (plain, then STARTTLS required; AUTH only over TLS), ``tls`` (TLS from the
    first byte), ``plain`` (no TLS, no AUTH)."""

    def __init__(
        self, certificate: Certificate, *, mode: str = "starttls", user: str = "gpu-bot@example.com", password: str
    ) -> None:
        self.certificate = certificate
        self.mode = mode
        self.user = user
        self.password = password
        self.refuse: dict[str, str] = {}
        self.received: list[Received] = []
        self.logins_refused = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.port = _free_port()
        self._controller: Controller | None = None

    def url(self, *, sender: str | None = None) -> str:
        scheme = "smtps" if self.mode == "tls" else "smtp"
        user = "" if self.mode == "plain" else self.user.replace("@", "%40") + "@"
        query = "?starttls=off&from=gpu-bot@example.com" if self.mode == "plain" else (f"?from={sender}" if sender else "")
        return f"{scheme}://{user}127.0.0.1:{self.port}{query}"

    def server(self, *, password: str | None = None) -> SmtpServer:
        """The bot's view of this server (SMTP_URL and SMTP_PASSWORD), with ``password`` (default: the right one)."""
        from pydantic import SecretStr

        secret = None if self.mode == "plain" else SecretStr(self.password if password is None else password)
        return parse_smtp_url(self.url()).with_secrets(password=secret)

    def client_context(self) -> ssl.SSLContext:
        """What the bot trusts: only this server's certificate."""
        return self.certificate.client_context()

    def start(self) -> MailServer:
        assert self._controller is None
        kwargs: dict[str, Any] = {"authenticator": self._authenticate, "auth_exclude_mechanism": ["CRAM-MD5"]}
        if self.mode == "starttls":
            kwargs |= {"tls_context": self.certificate.server_context(), "require_starttls": True, "auth_required": True}
        elif self.mode == "tls":
            # aiosmtpd cannot tell an implicit-TLS connection from a plain one: AUTH must not ask for STARTTLS here.
            kwargs |= {"ssl_context": self.certificate.server_context(), "auth_required": True, "auth_require_tls": False}
        else:
            kwargs = {}
        self._controller = Controller(Handler(self), hostname="127.0.0.1", port=self.port, server_hostname="mail.test", **kwargs)
        self._controller.start()
        return self

    def stop(self) -> None:
        """Down: connections are refused until ``start`` (on the same port)."""
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def keep(self, received: Received) -> None:
        with self._changed:
            self.received.append(received)
            self._changed.notify_all()

    def to(self, address: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if address in r.recipients]

    def _authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        if isinstance(auth_data, LoginPassword) and auth_data.login.decode() == self.user:
            if auth_data.password.decode() == self.password:
                return AuthResult(success=True, auth_data=auth_data)
        with self._lock:
            self.logins_refused += 1
        return AuthResult(success=False, handled=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
