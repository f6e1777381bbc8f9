"""Budget mail without a server: SMTP_URL read as admins write it, the password kept out of every message, the
addresses of budget.mail, and each mail built (plain text, the chart as a PNG, its headers) in both languages."""

from __future__ import annotations

import smtplib
import socket
import ssl
from datetime import date, datetime, timezone
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from typing import Any

import pytest
from pydantic import SecretStr

from bot.adapters.chart import ChartWords
from bot.adapters.i18n import speaking
from bot.adapters.mail import message as built
from bot.adapters.mail import words
from bot.adapters.mail.smtp import SmtpMailer, translate
from bot.adapters.mail.url import Security, SmtpServer, parse_smtp_url
from bot.domain.languages import Language
from bot.domain.mail import parse_address
from bot.domain.policy import PolicyError, parse_policy
from bot.errors import PermanentError, TemporaryError, Unreachable
from bot.services.mail_messages import (
    BudgetWarningMail,
    MonthlyCloseMail,
    NamespaceClose,
    chart_days,
    chart_figures,
    mail_from_json,
    mail_to_json,
)
from bot.services.messages import BudgetAlert
from bot.settings import SettingsError, load_settings
from tests.language_checks import catalog_misses, foreign_words

SECRET = "s3cr3t-Pa55word"
TEAM = "Frontier research"
WARNING = BudgetWarningMail(
    "frontier",
    BudgetAlert(TEAM, ("U0LEE",), (), 1275.0, 1500.0, 2100.0, "EUR", 80, None, datetime(2026, 11, 25, 14, tzinfo=timezone.utc)),
    date(2026, 11, 18),
    chart_days({date(2026, 11, d): {TEAM: 70.0} for d in range(1, 19)}),
    50.0,
)
OVER = BudgetWarningMail(
    "frontier",
    BudgetAlert(TEAM, (), (), 1620.0, 1500.0, 1900.0, "EUR", 100, date(2026, 11, 22), None),
    date(2026, 11, 24),
    chart_days({date(2026, 11, 1): {TEAM: 1620.0}}),
    50.0,
)
FORECAST = BudgetWarningMail(
    "frontier",
    BudgetAlert(TEAM, (), (), 500.0, 1500.0, 1700.0, "EUR", None, None, None),
    date(2026, 11, 9),
    chart_days({date(2026, 11, 1): {TEAM: 500.0}}),
    50.0,
)
CLOSE = MonthlyCloseMail(
    team="frontier",
    team_label=TEAM,
    month=date(2026, 10, 1),
    spent=1620.0,
    budget=1500.0,
    currency="EUR",
    over_since=date(2026, 10, 28),
    gpu_hours=810.5,
    idle_hours=120.0,
    idle_cost=240.0,
    namespaces=(
        NamespaceClose("ai-frontier-research", 1400.0, 700.0, 200.0),
        NamespaceClose("frontier-eval", 220.0, 110.5, 40.0),
    ),
    daily=chart_days({date(2026, 10, d): {"ai-frontier-research": 45.0, "others": 7.0} for d in range(1, 32)}),
    pace=48.39,
    missing=(date(2026, 10, 3), date(2026, 10, 4)),
)
MAILS = {"warning": WARNING, "over": OVER, "forecast": FORECAST, "close": CLOSE}
NAMES = [TEAM, "ai-frontier-research", "frontier-eval", "budget.mail", "EUR"]
POLICY = {
    "teams": {
        "frontier": {
            "display_name": TEAM,
            "channel": "C0FRONTIER",
            "namespaces": ["ai-frontier-research"],
            "approvers": {"users": ["U0LEE"]},
            "budget": {"monthly": 1500, "mail": ["Finance@Example.COM", "finance@example.com"]},
        }
    }
}


# --- SMTP_URL -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "smtp://gpu-bot%40example.com@smtp.example.com",
            ("smtp.example.com", 587, Security.STARTTLS, "gpu-bot@example.com", "gpu-bot@example.com"),
        ),
        (
            "smtp://apikey@smtp.example.com:2525?from=gpu-bot@example.com",
            ("smtp.example.com", 2525, Security.STARTTLS, "apikey", "gpu-bot@example.com"),
        ),
        (
            "smtps://gpu-bot%40example.com@mail.example.com",
            ("mail.example.com", 465, Security.TLS, "gpu-bot@example.com", "gpu-bot@example.com"),
        ),
        (
            "SMTPS://u@mail.example.com:4650?from=bot@example.com",
            ("mail.example.com", 4650, Security.TLS, "u", "bot@example.com"),
        ),
        (
            "smtp://relay.mail.svc:25?starttls=off&from=gpu-bot@example.com",
            ("relay.mail.svc", 25, Security.NONE, None, "gpu-bot@example.com"),
        ),
        ("smtp://relay?starttls=off&from=gpu-bot@example.com", ("relay", 25, Security.NONE, None, "gpu-bot@example.com")),
        ("smtp://u@127.0.0.1:1025?starttls=off&from=a@example.com", ("127.0.0.1", 1025, Security.NONE, "u", "a@example.com")),
        ("smtp://[::1]:587?from=a@example.com", ("::1", 587, Security.STARTTLS, None, "a@example.com")),
    ],
)
def test_smtp_url_reads_as_admins_write_it(url: str, expected: tuple[Any, ...]) -> None:
    server = parse_smtp_url(url)
    assert (server.host, server.port, server.security, server.user, server.sender) == expected


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (f"smtp://bot:{SECRET}@smtp.example.com", "holds a password: put it in SMTP_PASSWORD"),
        (f"smtps://{SECRET}:{SECRET}@smtp.example.com", "holds a password"),
        ("http://smtp.example.com", "must start with smtp://"),
        ("smtp://bot@smtp.example.com", "needs from=<address>"),
        ("smtp://smtp.example.com:465?from=a@example.com", "write smtps://"),
        ("smtp://u@relay.example.com:25?starttls=off&from=a@example.com", "the password would cross the network in clear"),
        ("smtp://smtp.example.com:99999?from=a@example.com", "port"),
        ("smtp://smtp.example.com?from=nobody", "from=: 'nobody' is not a mail address"),
        ("smtp://smtp.example.com?from=a@example.com&tls=yes", r"unknown or repeated query parameters \(tls\)"),
        ("smtp://smtp.example.com?from=a@example.com&starttls=maybe", "starttls="),
        ("smtps://smtp.example.com?from=a@example.com&starttls=off", "applies to smtp:// only"),
        ("smtp:///?from=a@example.com", "names no host"),
        ("smtp://smtp.example.com/inbox?from=a@example.com", "has a path"),
    ],
)
def test_a_bad_smtp_url_says_what_is_wrong_and_never_quotes_a_password(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as refused:
        parse_smtp_url(url)
    assert SECRET not in str(refused.value)


def test_a_url_with_a_password_stops_the_settings_without_showing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTP_URL", f"smtp://bot:{SECRET}@smtp.example.com:587?from=bot@example.com")
    with pytest.raises(SettingsError) as refused:
        load_settings()
    assert str(refused.value).startswith("SMTP_URL: ") and SECRET not in str(refused.value)
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_smtp_password_is_a_secret_nobody_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTP_URL", "smtp://gpu-bot%40example.com@smtp.example.com:587")
    monkeypatch.setenv("SMTP_PASSWORD", SECRET)
    settings = load_settings()
    server = settings.smtp_server()
    assert server is not None and server.password is not None and server.password.get_secret_value() == SECRET
    assert SECRET not in repr(settings) + str(settings) + repr(server) + str(server) + str(settings.model_dump())
    assert settings.mail_problems() == []


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        (
            {"SMTP_URL": "smtp://gpu-bot%40example.com@smtp.example.com"},
            "names the user gpu-bot@example.com but SMTP_PASSWORD is not set",
        ),
        ({"SMTP_URL": "smtp://smtp.example.com?from=a@example.com", "SMTP_PASSWORD": SECRET}, "SMTP_URL names no user"),
        ({"SMTP_PASSWORD": SECRET}, "SMTP_PASSWORD is set but SMTP_URL is not"),
        ({"SMTP_URL": "smtp://smtp.example.com?from=a@example.com", "SMTP_CA_BUNDLE": "/nowhere/ca.pem"}, "is not a file"),
    ],
)
def test_incomplete_mail_settings_are_named(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], problem: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (found,) = load_settings().mail_problems()
    assert problem in found and SECRET not in found


# --- budget.mail ----------------------------------------------------------------------------------


def test_budget_mail_is_a_list_of_addresses_each_once() -> None:
    policy = parse_policy(POLICY)
    budget = policy.teams["frontier"].budget
    assert budget is not None and budget.mail == ("Finance@example.com", "finance@example.com")
    single = parse_policy(
        {"teams": {"frontier": POLICY["teams"]["frontier"] | {"budget": {"monthly": 1, "mail": "cfo@example.com"}}}}
    )
    assert single.teams["frontier"].budget.mail == ("cfo@example.com",)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "bad",
    ["finance", "finance@", "Finance <finance@example.com>", "a@b", "a,b@example.com", "a..b@example.com", "a@-x.com"],
)
def test_budget_mail_refuses_what_is_not_an_address(bad: str) -> None:
    team = POLICY["teams"]["frontier"] | {"budget": {"monthly": 1, "mail": ["ok@example.com", bad]}}
    with pytest.raises(PolicyError, match="budget.mail") as refused:
        parse_policy({"teams": {"frontier": team}})
    assert repr(bad) in str(refused.value) or bad in str(refused.value)


def test_an_address_keeps_its_local_part_and_lowers_its_domain() -> None:
    assert parse_address(" Fin.Ance+gpu@Example.COM ") == "Fin.Ance+gpu@example.com"
    assert parse_address("a@bücher.example") == "a@bücher.example"
    assert built.ascii_address("a@bücher.example") == "a@xn--bcher-kva.example"


# --- the mail as it is sent -----------------------------------------------------------------------


def compose(mail: BudgetWarningMail | MonthlyCloseMail, language: Language) -> tuple[EmailMessage, list[ChartWords]]:
    drawn: list[ChartWords] = []

    def draw(*, daily: Any, pace: float, words: ChartWords) -> bytes:
        drawn.append(words)
        assert daily == chart_figures(mail.daily) and pace == mail.pace
        return b"\x89PNG\r\n\x1a\nfake"

    with speaking(language):
        message = built.build(
            mail,
            sender="gpu-bot@example.com",
            recipient="finance@example.com",
            key="outbox-7.20261118110000000000",
            sent_at=datetime(2026, 11, 18, 11, tzinfo=timezone.utc),
            zone=timezone.utc,
            draw=draw,
        )
    return message, drawn


@pytest.mark.parametrize("language", [Language.EN, Language.ZH_CN])
@pytest.mark.parametrize("name", MAILS)
def test_every_mail_is_plain_text_and_its_chart_as_a_png_in_both_languages(name: str, language: Language) -> None:
    mail = MAILS[name]
    with catalog_misses() as missed:
        message, drawn = compose(mail, language)
    assert missed == set()
    received = message_from_bytes(message.as_bytes(), policy=default)
    assert received.get_content_type() == "multipart/mixed"
    text_part = received.get_body(("plain",))
    assert text_part is not None and text_part.get_content_charset() == "utf-8"
    (attachment,) = received.iter_attachments()  # type: ignore[attr-defined]
    assert attachment.get_content_type() == "image/png" and attachment.get_payload(decode=True).startswith(b"\x89PNG")
    assert attachment.get_filename() == words.attachment_name(mail) and attachment.get_filename().endswith(".png")
    assert received["Message-ID"] == "<gpu-quota-bot.outbox-7.20261118110000000000@example.com>"
    assert received["From"] == "gpu-bot@example.com" and received["To"] == "finance@example.com"
    assert received["Auto-Submitted"] == "auto-generated" and received["Date"] == "Wed, 18 Nov 2026 11:00:00 +0000"
    subject, text = " ".join(str(received["Subject"]).split()), text_part.get_content()  # type: ignore[attr-defined]
    assert TEAM in subject and TEAM in text and "budget.mail" in text
    labels = " ".join([drawn[0].title, drawn[0].axis, drawn[0].month, drawn[0].pace, drawn[0].others])
    if language == Language.ZH_CN:
        assert foreign_words(subject + "\n" + text + "\n" + labels, values=NAMES) == []
        assert "GPU" in subject and "预算" in text


def test_the_english_warning_reads_as_finance_expects() -> None:
    message, drawn = compose(WARNING, Language.EN)
    assert message["Subject"] == "GPU budget: Frontier research has used 85% of its budget for November 2026"
    assert message.get_body(("plain",)).get_content() == (  # type: ignore[union-attr]
        "Frontier research has used 85% of its monthly GPU budget for November 2026: 1,275.00 EUR of 1,500.00 EUR"
        " (warning threshold 80%).\n"
        "Month-end forecast: 2,100.00 EUR, 140% of the budget.\n"
        "At the current burn the budget runs out around Nov 25, 2026, 2:00:00\u202fPM.\n\n"
        "The attached chart shows the GPU cost of each day this month against the budget's daily pace (50.00 EUR).\n\n"
        "The team's Slack channel got this warning too.\n\n"
        "You get this mail because the GPU quota policy lists this address for Frontier research (budget.mail).\n"
    )
    assert drawn == [
        ChartWords(
            title="Frontier research: GPU cost of each day, November 2026",
            axis="GPU cost (EUR)",
            month="November 2026",
            pace="Budget's daily pace (50.00 EUR)",
            others="Other namespaces",
        )
    ]


def test_the_warnings_at_100_percent_and_of_the_forecast_say_so() -> None:
    over, _ = compose(OVER, Language.EN)
    assert over["Subject"] == "GPU budget: Frontier research has used up its budget for November 2026 (108%)"
    text = over.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "It has been over budget since Nov 22, 2026." in text and "needs one more approval" in text
    early, _ = compose(FORECAST, Language.EN)
    assert early["Subject"] == "GPU budget: Frontier research is on course to overspend its budget for November 2026"
    assert "500.00 EUR of 1,500.00 EUR spent so far (33%)" in early.get_body(("plain",)).get_content()  # type: ignore[union-attr]


def test_the_close_lists_the_month_and_each_namespace() -> None:
    message, _ = compose(CLOSE, Language.EN)
    assert message["Subject"] == "GPU cost of Frontier research for October 2026: 1,620.00 EUR of 1,500.00 EUR (108%)"
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert (
        "Spent: 1,620.00 EUR of a monthly budget of 1,500.00 EUR (108%).\nThe team went over its budget on Oct 28, 2026." in text
    )
    assert "GPU-hours: 810.5, of which idle: 120.0 (costing 240.00 EUR)." in text
    assert "No metrics were recorded for Oct 3, 2026 and Oct 4, 2026: those days are not counted." in text
    assert "By namespace:\n  ai-frontier-research: 1,400.00 EUR (700.0 GPU-h)\n  frontier-eval: 220.00 EUR (110.5 GPU-h)" in text


def test_a_chinese_subject_travels_encoded_and_reads_back() -> None:
    message, _ = compose(CLOSE, Language.ZH_CN)
    raw = message.as_bytes()
    assert raw.isascii() and b"=?utf-8?" in raw
    assert " ".join(str(message_from_bytes(raw, policy=default)["Subject"]).split()) == (
        "Frontier research 2026年10月 的 GPU 费用：€1,620.00，预算 €1,500.00（108%）"
    )


def test_the_mailer_words_a_mail_in_its_teams_language() -> None:
    policy = parse_policy({"teams": {"frontier": POLICY["teams"]["frontier"] | {"language": "zh-CN"}}})
    mailer = SmtpMailer(parse_smtp_url("smtp://smtp.example.com?from=gpu-bot@example.com"), policy=policy)
    assert str(mailer.compose("finance@example.com", FORECAST, key="k")["Subject"]).startswith("GPU 预算：Frontier research 预计")


def test_a_mail_comes_back_from_the_outbox_json_as_it_was() -> None:
    for mail in MAILS.values():
        assert mail_from_json(mail_to_json(mail)) == mail
    with pytest.raises(KeyError):
        mail_from_json({"mail": "NoSuchMail", "fields": {}})


# --- what the server says -------------------------------------------------------------------------

SERVER = SmtpServer("smtp.example.com", 587, Security.STARTTLS, "gpu-bot@example.com", "gpu-bot", SecretStr(SECRET))


@pytest.mark.parametrize(
    ("error", "kind", "words"),
    [
        (
            smtplib.SMTPRecipientsRefused({"cfo@example.com": (550, b"5.1.1 mailbox unavailable")}),
            PermanentError,
            "refused the recipient cfo@example.com: 550 5.1.1",
        ),
        (
            smtplib.SMTPRecipientsRefused({"cfo@example.com": (451, b"4.7.1 greylisted, try later")}),
            TemporaryError,
            "451 4.7.1 greylisted",
        ),
        (
            smtplib.SMTPAuthenticationError(535, b"5.7.8 Authentication credentials invalid"),
            PermanentError,
            "refused the login of gpu-bot: 535",
        ),
        (smtplib.SMTPAuthenticationError(454, b"4.7.0 Temporary authentication failure"), TemporaryError, "454"),
        (
            smtplib.SMTPSenderRefused(553, b"5.7.1 not allowed to send as", "gpu-bot@example.com"),
            PermanentError,
            "refused the sender",
        ),
        (smtplib.SMTPDataError(552, b"5.3.4 message too big"), PermanentError, "refused the mail: 552"),
        (smtplib.SMTPConnectError(421, b"4.3.2 too many connections"), TemporaryError, "421"),
        (smtplib.SMTPNotSupportedError("STARTTLS extension not supported by server."), PermanentError, "does not offer STARTTLS"),
        (smtplib.SMTPServerDisconnected("Connection unexpectedly closed"), Unreachable, "closed the connection"),
        (ConnectionRefusedError(111, "Connection refused"), Unreachable, "refused the connection"),
        (socket.timeout("timed out"), Unreachable, "did not answer within 30 s"),
        (ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"), PermanentError, "is SMTP_URL's scheme right"),
    ],
)
def test_each_smtp_failure_is_temporary_or_permanent_with_the_servers_words(error: Exception, kind: type, words: str) -> None:
    translated = translate(error, SERVER)  # type: ignore[arg-type]
    assert type(translated) is kind and words in str(translated)
    assert "smtp.example.com:587" in str(translated) and SECRET not in str(translated)


def test_run_warns_of_budget_mail_that_cannot_go(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.server import mail_warnings

    policy = parse_policy(POLICY)
    assert mail_warnings(load_settings(), policy) == [
        "teams frontier list budget.mail but SMTP_URL is not set: their budget mail is not sent"
    ]
    monkeypatch.setenv("SMTP_URL", "smtp://gpu-bot%40example.com@smtp.example.com")
    assert mail_warnings(load_settings(), policy) == ["SMTP_URL names the user gpu-bot@example.com but SMTP_PASSWORD is not set"]
    monkeypatch.setenv("SMTP_PASSWORD", SECRET)
    assert mail_warnings(load_settings(), policy) == []
