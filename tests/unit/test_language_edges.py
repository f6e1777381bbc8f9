"""Languages at the edges (#24, from its review): a silent cluster or a missing namespace worded for a Chinese
reader, refusals logged in English, plurals of a pending line, a form answered in the language it opened in."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest

import bot.bootstrap  # noqa: F401  (lends the edge's wording to WordedError, as every entry point does)
from bot.adapters.i18n import speaking
from bot.adapters.slack import blocks, modals, reasons
from bot.domain.commands import RequestDraft
from bot.domain.languages import Language
from bot.errors import ClusterUnavailable, NamespaceNotFound
from bot.services.error_reasons import read_failure
from bot.services.failures import reason_of
from bot.services.quota_sync import SectionNotEntered
from bot.services.views import NamespaceStatus, PendingLine
from tests.language_checks import catalog_misses, foreign_words

SINCE = datetime(2026, 12, 8, 2, 46, tzinfo=timezone.utc)


def silent_cluster() -> ClusterUnavailable:
    return ClusterUnavailable("us-2", SINCE, "no answer for 4 s", delay=1.0)


def test_a_cluster_that_stopped_answering_while_an_apply_waited_for_its_section_reads_in_chinese() -> None:
    """QuotaSync._still_answering turns ClusterUnavailable into SectionNotEntered(str(error)) (quota_sync.py:177);
    changes.py:130 and shift_apply.py:84 word it with reason_of: AsSaid of the bot's English sentence, so a
    Chinese thread reads 'waiting for cluster us-2: no answer for 4 s (since ...)' (what a46b9b8 fixed for
    a ClusterUnavailable reaching reason_of directly)."""
    error = silent_cluster()
    try:  # exactly as QuotaSync._still_answering does
        raise SectionNotEntered(str(error), delay=error.delay) from error
    except SectionNotEntered as raised:
        entered = raised
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        chinese = reasons.render(reason_of(entered))
    assert missed == set()
    assert foreign_words(chinese, values=["us-2"]) == [], chinese


@pytest.mark.parametrize(
    "error",
    [silent_cluster(), NamespaceNotFound("the namespace ai-typo does not exist in the cluster", namespace="ai-typo")],
    ids=["cluster-silent", "no-namespace"],
)
def test_a_status_line_whose_quota_could_not_be_read_has_no_english_sentence_for_a_chinese_reader(error: Exception) -> None:
    """Queries.status keeps str(failure) (queries.py:83): the bot's own English sentences (ClusterUnavailable's,
    kube.py:269's NamespaceNotFound) end up in '配额无法读取：...' in Chinese."""
    status = NamespaceStatus(
        "ai-typo", "Frontier", "gpu-quota", "nvidia.com/gpu", None, None, None, (), (), error=read_failure(error)
    )
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        lines = blocks.status_lines([status])
    assert missed == set()
    assert foreign_words("\n".join(lines), values=["ai-typo", "us-2", "Frontier", "gpu-quota"]) == [], lines


def test_a_refusal_is_logged_in_english_whatever_the_readers_language() -> None:
    """docs/languages.md: log lines stay English. handlers/outcome.attempt logs str(error) of a Refused, which
    WordedError words in the *current* language: a Chinese person's refusal is logged in Chinese."""
    from bot.services.refusals import NoSuchNamespace, Reading, Refused
    from handlers.outcome import attempt

    def refuse() -> None:
        raise Refused(NoSuchNamespace("ai-typo", Reading.REQUEST))

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("handlers")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        with speaking(Language.ZH_CN):
            attempt(refuse, user="U0ALICE", what="request")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    logged = " ".join(record.getMessage() for record in records)
    assert logged and all(ord(c) < 0x2E80 for c in logged), logged


def test_one_gpu_and_one_approval_in_a_pending_line_are_singular() -> None:
    """The issue: plural forms for every count ("1 GPU now", was "1 GPUs"). The pending line keeps
    '{amount} GPUs' for '+1' and '({approvals} of {required} approvals' for 1 required (blocks.py:631-640)."""
    line = blocks.pending_line(
        PendingLine(3, "ns-a", "+1", 1, timedelta(days=1), "U1", 0, 1, datetime(2026, 12, 1, tzinfo=timezone.utc))
    )
    assert "+1 GPUs" not in line and "of 1 approvals" not in line, line


def test_a_form_submitted_speaks_the_language_the_form_was_opened_in() -> None:
    """A person whose Slack language the bot does not speak (zh-TW) reads the channel's language: the request
    form opened from frontier's channel (zh-CN) is in Chinese and keeps the channel in its private_metadata.
    Its submission (view_submission has no channel: Bolt's context.channel_id is None) is answered by the
    middleware's fallback, the policy's English: field errors, the progress and outcome views switch language."""

    from slack_bolt import BoltRequest

    from bot.adapters import i18n
    from bot.adapters.slack.languages import Languages, RequestScopedApp
    from bot.domain.policy import Policy

    policy = Policy.model_validate(
        {
            "language": "en",
            "teams": {
                "frontier": {
                    "channel": "C0FRONTIER",
                    "namespaces": ["ai-frontier"],
                    "approvers": {"users": ["U0LEE"]},
                    "language": "zh-CN",
                }
            },
        }
    )
    languages = Languages(policy, {"U0WEI": "zh-TW"}.get)
    assert languages.of_person("U0WEI", channel_id="C0FRONTIER") == Language.ZH_CN  # the form opened in Chinese
    from slack_bolt.authorization import AuthorizeResult

    def authorize(**_: object) -> AuthorizeResult:
        return AuthorizeResult(enterprise_id=None, team_id="T1", bot_token="xoxb-x", bot_user_id="UBOT", bot_id="B1")

    app = RequestScopedApp(signing_secret="x", authorize=authorize, process_before_response=True)
    app.use(languages.listener_middleware())
    heard: list[Language] = []
    with i18n.speaking(languages.of_person("U0WEI", channel_id="C0FRONTIER")):  # opened from frontier's channel
        opened = modals.request_form(RequestDraft(), ["ai-frontier"], channel_id="C0FRONTIER")

    @app.view("request-form")
    def on_submit(ack) -> None:  # type: ignore[no-untyped-def]
        heard.append(i18n.current())
        ack()

    body = {
        "type": "view_submission",
        "team": {"id": "T1"},
        "user": {"id": "U0WEI", "team_id": "T1"},
        "api_app_id": "A1",
        "view": {
            "id": "V1",
            "type": "modal",
            "callback_id": "request-form",
            "private_metadata": opened.private_metadata,
            "state": {"values": {}},
        },
    }
    response = app.dispatch(BoltRequest(mode="socket_mode", body=body))  # the form as it was opened, below
    assert response.status == 200 and heard, response.body
    assert heard == [Language.ZH_CN]
    assert i18n.current() == Language.EN  # the request's language ended with it
