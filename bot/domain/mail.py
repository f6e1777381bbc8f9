"""Mail addresses as the policy (``budget.mail``) and the settings (the From address) name them.

An address is the ``addr-spec`` of RFC 5322 that people type, ``finance@example.com``: a dot-atom local
part and a host name with at least one dot (or ``localhost``). Quoted local parts, address literals
(``user@[10.0.0.1]``) and display names are refused: a finance mailbox never needs them, and refusing
them keeps every address safe as an SMTP envelope address and a header value. An internationalised
domain is kept as written and sent in its ASCII form (IDNA) by the mail adapter. Pure: no I/O.
"""

from __future__ import annotations

import re

# RFC 5321: a local part of at most 64 octets, a forward-path of at most 256 (with its two brackets).
MAX_LOCAL = 64
MAX_ADDRESS = 254
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(rf"{_ATEXT}(\.{_ATEXT})*")
_LABEL = re.compile(r"(?!-)[^\W_](?:[^\W_]|-){0,62}(?<!-)", re.UNICODE)


def parse_address(text: str) -> str:
    """The address ``text`` names, its domain in lower case; raises ValueError saying what is wrong
    (the message quotes the address: an address is no secret)."""
    address = text.strip()
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain:
        raise ValueError(f"{address!r} is not a mail address (like finance@example.com)")
    if any(c.isspace() or c in '<>()[]\\,;:"' for c in address):
        raise ValueError(f"{address!r} is not a mail address: write the address alone, like finance@example.com")
    if len(local.encode()) > MAX_LOCAL or not _LOCAL.fullmatch(local):
        raise ValueError(f"{address!r} is not a mail address: its part before @ is not one")
    domain = domain.lower().rstrip(".")
    labels = domain.split(".")
    if not (len(labels) >= 2 or domain == "localhost") or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"{address!r} is not a mail address: {domain!r} is not a host name")
    if len(f"{local}@{domain}".encode()) > MAX_ADDRESS:
        raise ValueError(f"{address!r} is longer than a mail address may be ({MAX_ADDRESS} characters)")
    return f"{local}@{domain}"


def domain_of(address: str) -> str:
    """The part after the last ``@``."""
    return address.rpartition("@")[2]
