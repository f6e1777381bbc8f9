"""Budget mail against a real SMTP server (aiosmtpd on loopback, STARTTLS required, AUTH after it): each budget
warning and each monthly close reaches each address exactly once, with the chart as a PNG, across a restart of
the bot (a new sandbox on the same database, SQLite and PostgreSQL) and an outage of the server; a refused
recipient and a refused login are given up after the permanent tries, counted, one log line a try, and the
password is never written anywhere."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import REGISTRY
from pydantic import SecretStr
from sqlalchemy import select

from bot.adapters.db.models import OutboxEntry
from bot.adapters.db.repository import Repository
from bot.adapters.mail.smtp import SmtpMailer
from bot.check_config import _mail as check_mail
from bot.clock import ManualClock
from bot.domain.policy import Policy, parse_policy
from bot.errors import PermanentError
from bot.observability import OutboxBacklog
from bot.sandbox.certificate import Certificate
from bot.sandbox.history import A100, History, HistoryMetrics, PodRun
from bot.sandbox.session import Sandbox
from bot.settings import Settings
from tests.mail_server import MailServer

UTC = timezone.utc
FINANCE, CFO = "finance@example.com", "cfo@example.com"
PASSWORD = "correct-horse-battery-9"
WRONG = "wrong-staple-7"
# 8 A100s at 2.00 EUR an hour, all month: 384 EUR a day.
HISTORY = History(
    step=timedelta(minutes=5),
    start=datetime(2026, 11, 1, tzinfo=UTC),
    end=datetime(2026, 12, 2, tzinfo=UTC),
    pods=[
        PodRun("ns-train", "train", 8, "node-a", A100, datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 2, tzinfo=UTC), 0.6)
    ],
)
WARNING_AT = datetime(2026, 11, 10, 11, tzinfo=UTC)  # 227 h x 16 EUR = 3,632 EUR of 5,000: 73 %, forecast over 100 %
CLOSE_AT = datetime(2026, 12, 1, 8, tzinfo=UTC)


def policy(*, language: str = "en") -> Policy:
    return parse_policy(
        {
            "schedules": {"timezone": "UTC"},
            "pricing": {"currency": "EUR", "default_per_gpu_hour": 1.0, "models": {A100: 2.0}},
            "teams": {
                "research": {
                    "display_name": "Research",
                    "language": language,
                    "channel": "C0FRONTIER",
                    "namespaces": ["ns-train"],
                    "approvers": {"users": ["U0LEE"]},
                    "budget": {"monthly": 5000, "mail": [FINANCE, CFO]},
                }
            },
        }
    )


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return Certificate.make(tmp_path_factory.mktemp("mail-tls"))


@pytest.fixture
def mail(certificate: Certificate) -> Iterator[MailServer]:
    server = MailServer(certificate, password=PASSWORD).start()
    yield server
    server.stop()


def sandbox(mail: MailServer, clock: ManualClock, url: str, *, password: str = PASSWORD, language: str = "en") -> Sandbox:
    return Sandbox(
        policy=policy(language=language),
        clock=clock,
        seed=False,
        database_url=url,
        metrics=HistoryMetrics(HISTORY),
        mail=mail.server(password=password),
        mail_trusts=mail.client_context(),
    ).start()


def ticks(box: Sandbox, clock: ManualClock, count: int) -> None:
    """Reconcile ticks ten minutes apart (past every back-off of a try or two)."""
    assert box.services is not None
    for _ in range(count):
        clock.advance(timedelta(minutes=10))
        box.services.reconciler.tick()


def mail_entries(box: Sandbox) -> list[OutboxEntry]:
    assert box.database is not None

    def read(repo: Repository) -> list[OutboxEntry]:
        rows = repo.session.scalars(select(OutboxEntry).where(OutboxEntry.kind == "mail").order_by(OutboxEntry.id)).all()
        repo.session.expunge_all()
        return list(rows)

    return box.database.run(read)


def budget_posts(box: Sandbox) -> list[str]:
    return [r.text for r in box.slack.records if r.kind == "message" and r.channel == "C0FRONTIER" and "budget" in r.text]


def smtp_errors(kind: str) -> float:
    return REGISTRY.get_sample_value("gpu_quota_errors_total", {"system": "smtp", "kind": kind}) or 0.0


def test_each_budget_warning_reaches_each_address_once_across_an_outage_and_restarts(
    mail: MailServer, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock(WARNING_AT)
    mail.stop()  # the mail server is down when the warning fires
    first = sandbox(mail, clock, database_url)
    try:
        assert first.services is not None and first.services.budget is not None
        with caplog.at_level(logging.INFO):
            assert ("research", "50") in first.services.budget.check()
            assert len(budget_posts(first)) == 1  # Slack got it at once
            assert [(e.target, e.state, e.attempts) for e in mail_entries(first)] == [
                (FINANCE, "pending", 1),
                (CFO, "pending", 1),
            ]
            ticks(first, clock, 2)
        tries = [r for r in caplog.records if "did not take outbox entry" in r.getMessage()]
        assert len(tries) == 6 and all(r.exc_info is None for r in tries)  # one line a try, no traceback
        assert "refused the connection" in tries[0].getMessage() and "Traceback" not in caplog.text
        health = first.database.outbox().health()  # type: ignore[union-attr]
        assert health.channels["mail"].counts == {"pending": 2} and health.channels["slack"].counts == {"sent": 1}
        scraped = {
            (s.labels["channel"], s.labels["state"]): s.value
            for m in OutboxBacklog(first.database, clock).collect()
            for s in m.samples
            if "state" in s.labels
        }  # type: ignore[arg-type]
        assert scraped[("mail", "pending")] == 2 and scraped[("slack", "pending")] == 0
    finally:
        first.stop()
    assert mail.received == []

    mail.start()  # the server is back, and the bot restarts
    second = sandbox(mail, clock, database_url)
    try:
        assert second.services is not None and second.services.budget is not None
        assert second.services.budget.check() == []  # the warning was claimed: not raised again
        ticks(second, clock, 3)
        assert budget_posts(second) == []
    finally:
        second.stop()
    third = sandbox(mail, clock, database_url)
    try:
        ticks(third, clock, 3)
        assert [e.state for e in mail_entries(third)] == ["sent", "sent"]
    finally:
        third.stop()

    for address in (FINANCE, CFO):
        (got,) = mail.to(address)
        assert got.recipients == (address,) and got.login == mail.user
        assert got.subject == "GPU budget: Research has used 73% of its budget for November 2026"
        assert "3,632.00 EUR of 5,000.00 EUR (warning threshold 50%)" in got.text
        assert "Month-end forecast: 11,520.00 EUR, 230% of the budget." in got.text
        ((name, kind, png),) = got.attachments
        assert name == "gpu-cost-research-2026-11-10.png" and kind == "image/png" and png.startswith(b"\x89PNG\r\n\x1a\n")
        assert got.message["Auto-Submitted"] == "auto-generated"
    ids = {received.message["Message-ID"] for received in mail.received}
    assert len(ids) == 2 and all(i.startswith("<gpu-quota-bot.outbox-") and i.endswith("@example.com>") for i in ids)


def test_a_refused_recipient_is_given_up_and_the_others_get_theirs(
    mail: MailServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mail.refuse[CFO] = "550 5.1.1 <cfo@example.com>: mailbox unavailable"
    clock = ManualClock(WARNING_AT)
    box = sandbox(mail, clock, f"sqlite:///{tmp_path}/bot.db")
    undeliverable = smtp_errors("undeliverable")
    try:
        assert box.services is not None and box.services.budget is not None
        with caplog.at_level(logging.INFO):
            box.services.budget.check()
            ticks(box, clock, 4)
        assert len(mail.to(FINANCE)) == 1 and mail.to(CFO) == []
        states = {e.target: (e.state, e.attempts, e.last_error) for e in mail_entries(box)}
        assert states[FINANCE][:2] == ("sent", 0)
        assert states[CFO][:2] == ("dead", 3) and "refused the recipient cfo@example.com: 550 5.1.1" in states[CFO][2]
        assert smtp_errors("undeliverable") == undeliverable + 1
        lines = [r for r in caplog.records if r.name == "bot.services.announce" and "mail:cfo@example.com" in r.getMessage()]
        assert [r.levelname for r in lines] == ["WARNING", "WARNING", "ERROR"] and all(r.exc_info is None for r in lines)
        assert "try 1 of 3" in lines[0].getMessage() and "giving up" in lines[2].getMessage()
    finally:
        box.stop()


def test_a_refused_login_is_given_up_and_the_password_is_never_written(
    mail: MailServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = ManualClock(WARNING_AT)
    box = sandbox(mail, clock, f"sqlite:///{tmp_path}/bot.db", password=WRONG)
    undeliverable, permanent = smtp_errors("undeliverable"), smtp_errors("permanent")
    try:
        assert box.services is not None and box.services.budget is not None
        with caplog.at_level(logging.DEBUG):
            box.services.budget.check()
            ticks(box, clock, 4)
        # Two addresses, three tries each, and smtplib tries each mechanism the server offers (PLAIN, then LOGIN).
        assert mail.received == [] and mail.logins_refused == 2 * 3 * 2
        entries = mail_entries(box)
        assert [(e.state, e.attempts) for e in entries] == [("dead", 3), ("dead", 3)]
        assert all("refused the login of gpu-bot@example.com: 535" in e.last_error for e in entries)
        assert smtp_errors("undeliverable") == undeliverable + 2 and smtp_errors("permanent") == permanent + 6
        given_up = [r for r in caplog.records if r.name == "bot.services.announce" and r.levelno == logging.ERROR]
        assert len(given_up) == 2 and all("535" in r.getMessage() for r in given_up)
        written = caplog.text + capsys.readouterr().err + "".join(e.last_error for e in entries)
        written += repr(box.services) + repr(mail.server(password=WRONG))
        assert WRONG not in written and PASSWORD not in written
        with pytest.raises(PermanentError) as refused:
            SmtpMailer(mail.server(password=WRONG), policy=policy(), context=mail.client_context()).check_login()
        assert "535" in str(refused.value) and WRONG not in str(refused.value) and refused.value.__cause__ is None
    finally:
        box.stop()


def test_the_monthly_close_goes_once_to_each_address_with_the_months_figures(mail: MailServer, database_url: str) -> None:
    clock = ManualClock(CLOSE_AT)
    box = sandbox(mail, clock, database_url)
    try:
        assert box.services is not None and box.services.monthly_close is not None
        assert box.services.monthly_close.run() == ["research"]
        assert box.services.monthly_close.run() == []
    finally:
        box.stop()
    again = sandbox(mail, clock, database_url)
    try:
        clock.advance(timedelta(days=1))  # the run of the 2nd finds the month closed
        assert again.services is not None and again.services.monthly_close is not None
        assert again.services.monthly_close.run() == []
        ticks(again, clock, 2)
    finally:
        again.stop()
    for address in (FINANCE, CFO):
        (got,) = mail.to(address)
        # 30 days x 24 h x 8 GPUs x 2.00 EUR
        assert got.subject == "GPU cost of Research for November 2026: 11,520.00 EUR of 5,000.00 EUR (230%)"
        assert "Spent: 11,520.00 EUR of a monthly budget of 5,000.00 EUR (230%)." in got.text
        assert "The team went over its budget on Nov 14, 2026." in got.text  # 14 x 384 = 5,376
        assert "  ns-train: 11,520.00 EUR (5,760.0 GPU-h)" in got.text and "No metrics" not in got.text
        ((name, kind, png),) = got.attachments
        assert name == "gpu-cost-research-2026-11.png" and kind == "image/png" and png.startswith(b"\x89PNG")


def test_a_chinese_teams_mail_is_in_chinese(mail: MailServer, tmp_path: Path) -> None:
    clock = ManualClock(CLOSE_AT)
    box = sandbox(mail, clock, f"sqlite:///{tmp_path}/bot.db", language="zh-CN")
    try:
        assert box.services is not None and box.services.monthly_close is not None
        assert box.services.monthly_close.run() == ["research"]
    finally:
        box.stop()
    (got,) = mail.to(FINANCE)
    assert got.subject == "Research 2026年11月 的 GPU 费用：€11,520.00，预算 €5,000.00（230%）"
    assert "按命名空间：\n  ns-train：€11,520.00（5,760.0 GPU 小时）" in got.text


def scheduled(box: Sandbox) -> dict[str, str]:
    """The jobs ``run`` would schedule for this sandbox's services, with their triggers."""
    import jobs

    assert box.services is not None
    scheduler = BackgroundScheduler(timezone="UTC")
    jobs.register(scheduler, box.services, reconcile_seconds=30, sweep_seconds=600)
    return {job.id: str(job.trigger) for job in scheduler.get_jobs()}


def test_the_monthly_close_is_scheduled_on_the_policys_cron_with_smtp_url_only(mail: MailServer, tmp_path: Path) -> None:
    with_mail = sandbox(mail, ManualClock(CLOSE_AT), f"sqlite:///{tmp_path}/a.db")
    without = Sandbox(
        policy=policy(), seed=False, database_url=f"sqlite:///{tmp_path}/b.db", metrics=HistoryMetrics(HISTORY)
    ).start()
    try:
        assert scheduled(with_mail)["monthly_close"] == "cron[month='*', day='1-7', day_of_week='*', hour='8', minute='0']"
        assert "monthly_close" not in scheduled(without) and "budget_warnings" in scheduled(without)
    finally:
        with_mail.stop()
        without.stop()


def test_check_config_logs_in_without_sending(mail: MailServer, certificate: Certificate) -> None:
    said: list[str] = []
    settings = Settings(smtp_url=mail.url(), smtp_password=SecretStr(PASSWORD), smtp_ca_bundle=certificate.cert)
    assert check_mail(settings, policy(), said.append, login=True) == []
    assert said == [f"mail server 127.0.0.1:{mail.port}: logged in as gpu-bot@example.com"] and mail.received == []
    wrong = Settings(smtp_url=mail.url(), smtp_password=SecretStr(WRONG), smtp_ca_bundle=certificate.cert)
    (problem,) = check_mail(wrong, policy(), said.append, login=True)
    assert (
        problem.startswith("SMTP_URL: the mail server at 127.0.0.1:") and "refused the login" in problem and WRONG not in problem
    )
    untrusted = Settings(smtp_url=mail.url(), smtp_password=SecretStr(PASSWORD))
    (problem,) = check_mail(untrusted, policy(), said.append, login=True)
    assert "certificate the bot does not trust" in problem and "SMTP_CA_BUNDLE" in problem
    mail.stop()
    (problem,) = check_mail(settings, policy(), said.append, login=True)
    assert "refused the connection" in problem
    assert check_mail(Settings(), policy(), said.append, login=True) == [
        "teams research list budget.mail but SMTP_URL is not set: no mail would be sent"
    ]
    assert check_mail(Settings(smtp_url=mail.url()), policy(), said.append, login=True) == [
        "SMTP_URL names the user gpu-bot@example.com but SMTP_PASSWORD is not set"
    ]


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
@pytest.mark.parametrize("mode", ["tls", "plain"])
def test_implicit_tls_and_a_plain_relay_deliver_too(certificate: Certificate, tmp_path: Path, mode: str) -> None:
    server = MailServer(certificate, mode=mode, password=PASSWORD).start()
    clock = ManualClock(WARNING_AT)
    box = sandbox(server, clock, f"sqlite:///{tmp_path}/bot.db")
    try:
        assert box.services is not None and box.services.budget is not None
        box.services.budget.check()
        assert len(server.to(FINANCE)) == 1 and len(server.to(CFO)) == 1
        assert server.to(FINANCE)[0].login == (None if mode == "plain" else server.user)
    finally:
        box.stop()
        server.stop()


def test_no_mail_is_recorded_without_smtp_url(tmp_path: Path) -> None:
    box = Sandbox(
        policy=policy(),
        clock=ManualClock(WARNING_AT),
        seed=False,
        database_url=f"sqlite:///{tmp_path}/bot.db",
        metrics=HistoryMetrics(HISTORY),
    ).start()
    try:
        assert box.services is not None and box.services.budget is not None and box.services.monthly_close is None
        assert ("research", "50") in box.services.budget.check() and len(budget_posts(box)) == 1
        assert mail_entries(box) == []
    finally:
        box.stop()
