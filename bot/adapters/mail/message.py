"""A mail as the server receives it: ``email.message.EmailMessage``, plain text and the chart as a PNG.

Built in the current language (the caller speaks the team's). Headers: From, To, Subject (RFC 2047
encoded when it is not ASCII), Date, a Message-ID made of the outbox entry's key (the same on every try,
so a receiver can drop a second copy), and ``Auto-Submitted: auto-generated`` (RFC 3834: no
out-of-office reply comes back to the bot's address).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime, tzinfo
from email.message import EmailMessage
from email.utils import format_datetime

from bot.adapters.chart import ChartWords, daily_cost_chart
from bot.adapters.mail import words
from bot.domain.mail import domain_of
from bot.services.mail_messages import MailMessage, chart_figures

Draw = Callable[..., bytes]


def message_id(key: str, sender: str) -> str:
    """The Message-ID of the mail sent for outbox entry ``key`` from ``sender`` (RFC 5322's msg-id)."""
    return f"<gpu-quota-bot.{key}@{ascii_domain(domain_of(sender))}>"


def ascii_domain(domain: str) -> str:
    """An internationalised domain in the ASCII form SMTP and headers carry (IDNA); others as they are."""
    return domain if domain.isascii() else domain.encode("idna").decode("ascii")


def ascii_address(address: str) -> str:
    local, _, domain = address.rpartition("@")
    return f"{local}@{ascii_domain(domain)}"


def build(
    mail: MailMessage,
    *,
    sender: str,
    recipient: str,
    key: str,
    sent_at: datetime,
    zone: tzinfo,
    draw: Draw = daily_cost_chart,
) -> EmailMessage:
    """The mail ``mail`` to ``recipient``, worded in the current language, with its chart attached."""
    message = EmailMessage()
    message["Subject"] = words.subject(mail)
    message["From"] = ascii_address(sender)
    message["To"] = ascii_address(recipient)
    message["Date"] = format_datetime(sent_at)
    message["Message-ID"] = message_id(key, sender)
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(words.body(mail, zone=zone))
    png = _chart(mail, words.chart_words(mail), draw)
    message.add_attachment(png, maintype="image", subtype="png", filename=words.attachment_name(mail))
    return message


def _chart(mail: MailMessage, labels: ChartWords, draw: Draw) -> bytes:
    figures: Mapping[date, Mapping[str, float]] = chart_figures(mail.daily)
    return draw(daily=figures, pace=mail.pace, words=labels)
