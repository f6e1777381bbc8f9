"""``SMTP_URL`` read into the server the bot sends mail through (no I/O here: ``smtp.py`` connects).

The forms admins know from other tools' mail settings:

- ``smtp://[user@]host[:port]``: the submission port, **587** by default, with **STARTTLS**, which the bot
  requires: a server that does not offer it is refused (nothing is sent in clear).
- ``smtps://[user@]host[:port]``: TLS from the first byte (implicit TLS), **465** by default.
- ``smtp://host:25?starttls=off``: no TLS, for a relay on a trusted network that takes mail without a
  login (a relay in the cluster, a sidecar); a user is refused here unless the host is a loopback
  address, so a password never crosses a network in clear.

Query parameters: ``from=<address>``, the From address (default: the user, when it is an address), and
``starttls=off``. A user that is an address is written with ``%40`` for its ``@``
(``smtp://gpu-bot%40example.com@smtp.example.com:587``). The password is ``SMTP_PASSWORD``, never part
of the URL: a URL holding one is refused, and no message here ever quotes it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import SecretStr

from bot.domain.mail import parse_address


class Security(StrEnum):
    STARTTLS = "starttls"  # smtp://: plain at first, then TLS before anything else is said
    TLS = "tls"  # smtps://: TLS from the first byte
    NONE = "none"  # smtp://...?starttls=off


DEFAULT_PORTS = {Security.STARTTLS: 587, Security.TLS: 465, Security.NONE: 25}
_QUERY = ("from", "starttls")


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    security: Security
    sender: str  # the From address
    user: str | None = None
    password: SecretStr | None = field(default=None, repr=False)
    ca_bundle: Path | None = None  # the CA the server's certificate is checked against (default: the system's)
    timeout: float = 30.0  # seconds, per connection and per reply

    @property
    def where(self) -> str:
        """``host:port`` as log lines and errors name the server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def with_secrets(self, *, password: SecretStr | None, ca_bundle: Path | None = None) -> SmtpServer:
        return replace(self, password=password, ca_bundle=ca_bundle)


def parse_smtp_url(url: str) -> SmtpServer:
    """The server ``url`` names; raises ValueError saying what is wrong (never quoting a password)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        raise ValueError("is not a URL: write it as smtp://user@host:587 or smtps://user@host:465") from None
    scheme = parts.scheme.lower()
    if scheme not in ("smtp", "smtps"):
        raise ValueError("must start with smtp:// (STARTTLS, port 587) or smtps:// (TLS, port 465)")
    if parts.password is not None:
        raise ValueError("holds a password: put it in SMTP_PASSWORD instead (SMTP_URL is shown in logs; the password never is)")
    if not parts.hostname:
        raise ValueError("names no host: write it as smtp://user@host:587 or smtps://user@host:465")
    if parts.path not in ("", "/") or parts.fragment:
        raise ValueError("has a path: it is smtp://user@host:port, with from= and starttls= as its only query")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - set(_QUERY))
    if unknown or any(len(values) > 1 for values in query.values()):
        raise ValueError(
            f"has unknown or repeated query parameters ({', '.join(unknown) or 'repeated'}): it takes from= and starttls=off"
        )
    security = _security(scheme, query.get("starttls", [""])[0])
    try:
        port = parts.port or DEFAULT_PORTS[security]
    except ValueError:
        raise ValueError("has a port that is not a number from 1 to 65535") from None
    if security == Security.STARTTLS and port == DEFAULT_PORTS[Security.TLS]:
        raise ValueError("is smtp:// on port 465, where servers speak TLS from the first byte: write smtps://")
    user = unquote(parts.username) if parts.username else None
    if security == Security.NONE and user and not _loopback(parts.hostname):
        raise ValueError(
            "names a user with starttls=off: the password would cross the network in clear; use smtp:// (STARTTLS) or smtps://"
        )
    return SmtpServer(
        host=parts.hostname, port=port, security=security, sender=_sender(query.get("from", [""])[0], user), user=user
    )


def _security(scheme: str, starttls: str) -> Security:
    if scheme == "smtps":
        if starttls:
            raise ValueError("is smtps:// (TLS from the start): starttls= applies to smtp:// only")
        return Security.TLS
    if starttls.lower() in ("", "on", "required", "true", "yes"):
        return Security.STARTTLS
    if starttls.lower() in ("off", "false", "no"):
        return Security.NONE
    raise ValueError("has starttls= set to something other than off (STARTTLS is required unless starttls=off)")


def _sender(given: str, user: str | None) -> str:
    if given:
        try:
            return parse_address(given)
        except ValueError as error:
            raise ValueError(f"from=: {error}") from None
    if user and "@" in user:
        try:
            return parse_address(user)
        except ValueError:
            pass
    raise ValueError("needs from=<address>, the From of the bot's mail (taken from the user only when that is an address)")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
