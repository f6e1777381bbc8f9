"""The bot's mail, sent with smtplib through the server ``SMTP_URL`` names (``bot.adapters.mail.url``).

One connection per mail, one recipient per mail: connect, STARTTLS (or TLS from the start), log in when
``SMTP_URL`` names a user, send, quit. What goes wrong comes out in the bot's error taxonomy, with the
server's own words and never the password (smtplib's debug output stays off):

- ``TemporaryError`` (``Unreachable`` when nothing answered): the connection refused, reset or timed out,
  any 4xx reply (greylisting, a full mailbox, a busy server), a TLS handshake cut short.
- ``PermanentError``: a 5xx reply (the recipient or the sender refused, the mail refused), the login
  refused (535), no STARTTLS where ``smtp://`` asks for it, a certificate the bot does not trust.

Each failure is counted (``gpu_quota_errors{system="smtp"}``) and logged once, by the outbox (which
knows whether it retries). A reply the server gives after it took the mail (its answer to QUIT) is not
a failure: the mail is delivered.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from collections.abc import Callable
from datetime import timezone
from email.message import EmailMessage
from typing import TypeVar

from bot.adapters import i18n
from bot.adapters.mail.message import ascii_address, build
from bot.adapters.mail.url import Security, SmtpServer
from bot.clock import Clock, SystemClock
from bot.domain.policy import Policy
from bot.errors import GpuQuotaError, PermanentError, TemporaryError, Unreachable
from bot.observability import count_error
from bot.services.mail_messages import MailMessage

T = TypeVar("T")
_REPLY_SHOWN = 200  # characters of a server's reply kept in an error


class SmtpMailer:
    """Implements ``bot.services.ports.Mailer``; ``check_login`` is check-config's login without sending."""

    def __init__(
        self, server: SmtpServer, *, policy: Policy, clock: Clock | None = None, context: ssl.SSLContext | None = None
    ) -> None:
        """``context``: the certificates the server's is checked against (default: ``server.ca_bundle``, else the system's)."""
        self._server = server
        self._policy = policy
        self._clock = clock or SystemClock()
        self._context = context or ssl.create_default_context(cafile=str(server.ca_bundle) if server.ca_bundle else None)

    @property
    def server(self) -> SmtpServer:
        return self._server

    def send(self, recipient: str, mail: MailMessage, *, key: str) -> None:
        """Word ``mail`` in its team's language and hand it to the server for ``recipient``."""
        message = self.compose(recipient, mail, key=key)
        sender, to = ascii_address(self._server.sender), ascii_address(recipient)
        self._session(lambda smtp: smtp.send_message(message, from_addr=sender, to_addrs=[to]))

    def compose(self, recipient: str, mail: MailMessage, *, key: str) -> EmailMessage:
        """The mail as it is sent (its words in the language of ``mail.team``)."""
        team = self._policy.teams.get(mail.team)
        with i18n.speaking(self._policy.language_of(team)):
            return build(
                mail,
                sender=self._server.sender,
                recipient=recipient,
                key=key,
                sent_at=self._clock.now().astimezone(timezone.utc),
                zone=self._policy.schedules.zone,
            )

    def check_login(self) -> None:
        """Connect, secure the connection and log in as ``SMTP_URL`` says, then quit: nothing is sent."""
        self._session(lambda smtp: smtp.noop())

    def _session(self, work: Callable[[smtplib.SMTP], T]) -> T:
        """``work`` on a connection made ready (secured, logged in); the failures translated and counted."""
        try:
            smtp = self._connect()
        except (smtplib.SMTPException, OSError) as error:
            raise self._failed(error, "connect") from None
        try:
            try:
                self._ready(smtp)
                done = work(smtp)
            except (smtplib.SMTPException, OSError) as error:
                raise self._failed(error, "send") from None
            try:
                smtp.quit()
            except (smtplib.SMTPException, OSError):
                pass  # the server has the mail already: what it says to QUIT does not change that
            return done
        finally:
            smtp.close()

    def _connect(self) -> smtplib.SMTP:
        server = self._server
        if server.security == Security.TLS:
            return smtplib.SMTP_SSL(server.host, server.port, timeout=server.timeout, context=self._context)
        return smtplib.SMTP(server.host, server.port, timeout=server.timeout)

    def _ready(self, smtp: smtplib.SMTP) -> None:
        server = self._server
        smtp.ehlo()
        if server.security == Security.STARTTLS:
            smtp.starttls(context=self._context)
            smtp.ehlo()
        if server.user:
            password = server.password.get_secret_value() if server.password is not None else ""
            smtp.login(server.user, password)

    def _failed(self, error: smtplib.SMTPException | OSError, step: str) -> GpuQuotaError:
        translated = translate(error, self._server, step=step)
        count_error("smtp", "temporary" if isinstance(translated, TemporaryError) else "permanent")
        return translated


def translate(error: smtplib.SMTPException | OSError, server: SmtpServer, *, step: str = "send") -> GpuQuotaError:
    """``error`` (smtplib's, ssl's, a socket's) as the bot's error, naming the server and what it said."""
    at = f"the mail server at {server.where}"
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        recipient, (code, reply) = next(iter(error.recipients.items()))
        return _coded(code, f"{at} refused the recipient {recipient}: {_reply(code, reply)}")
    if isinstance(error, smtplib.SMTPSenderRefused):
        return _coded(error.smtp_code, f"{at} refused the sender {error.sender}: {_reply(error.smtp_code, error.smtp_error)}")
    if isinstance(error, smtplib.SMTPAuthenticationError):
        return _coded(error.smtp_code, f"{at} refused the login of {server.user}: {_reply(error.smtp_code, error.smtp_error)}")
    if isinstance(error, smtplib.SMTPNotSupportedError):
        if server.security == Security.STARTTLS and "STARTTLS" in str(error).upper():
            return PermanentError(
                f"{at} does not offer STARTTLS, which smtp:// requires: use smtps:// (TLS from the start),"
                " or smtp://...?starttls=off for a relay that takes mail without TLS"
            )
        return PermanentError(
            f"{at} offers no login (SMTP AUTH): remove the user from SMTP_URL, or use the server's submission port"
        )
    if isinstance(error, smtplib.SMTPServerDisconnected):
        return Unreachable(f"{at} closed the connection during {step}", delay=5)
    if isinstance(error, smtplib.SMTPResponseException):
        return _coded(error.smtp_code, f"{at} refused the mail: {_reply(error.smtp_code, error.smtp_error)}")
    if isinstance(error, ssl.SSLCertVerificationError):
        return PermanentError(
            f"{at} has a certificate the bot does not trust ({error.verify_message}): set SMTP_CA_BUNDLE to its CA's certificate"
        )
    if isinstance(error, ssl.SSLError):
        return PermanentError(
            f"{at} did not complete a TLS handshake ({getattr(error, 'reason', None) or type(error).__name__}): smtps:// speaks TLS from the"
            " first byte (port 465), smtp:// starts it with STARTTLS (port 587); is SMTP_URL's scheme right for this port?"
        )
    if isinstance(error, ConnectionRefusedError):
        return Unreachable(f"{at} refused the connection (is it running, and is the port right?)", delay=5)
    if isinstance(error, socket.timeout | TimeoutError):
        return Unreachable(f"{at} did not answer within {server.timeout:g} s", delay=5)
    if isinstance(error, socket.gaierror):
        return Unreachable(f"{at}: the host name does not resolve ({error.strerror})", delay=5)
    if isinstance(error, OSError):
        return Unreachable(f"{at} could not be reached ({error.strerror or type(error).__name__})", delay=5)
    if isinstance(error, smtplib.SMTPException) and "authentication method" in str(error):
        return PermanentError(f"{at} offers no login mechanism smtplib speaks (PLAIN, LOGIN, CRAM-MD5): {error}")
    return TemporaryError(f"{at}: {error}", delay=5)  # smtplib's own complaints (a malformed reply, ...)


def _coded(code: int, message: str) -> GpuQuotaError:
    """A reply's error by its code: 4xx may pass, 5xx (or anything else) will not."""
    return TemporaryError(message, delay=30) if 400 <= code < 500 else PermanentError(message)


def _reply(code: int, reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    text = " ".join(text.split())
    return f"{code} {text[:_REPLY_SHOWN]}".strip()
