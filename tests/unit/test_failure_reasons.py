"""Failure reasons: typed, stored as JSON, worded at the Slack edge in the words the services used to
make, and in Chinese; a reason stored as plain text by the version before is shown exactly as stored."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest

from bot.adapters.i18n import speaking
from bot.adapters.slack import reasons
from bot.adapters.slack.mrkdwn import escape
from bot.adapters.slack.words import render
from bot.domain import failure_reasons as f
from bot.domain.languages import Language
from bot.errors import ClusterUnavailable
from bot.services.failures import reason_of
from bot.services.messages import ApplyFailed, GrantNotPutBack, SourceNotRaised, WaitingForCluster, from_json, to_json
from tests.language_checks import catalog_misses, foreign_words

WORDED = [
    (
        f.ClusterNotAnswering("us-2", "2026-12-08T02:46:00+00:00", "no answer for 4 s"),
        "waiting for cluster us-2: no answer for 4 s (since 2026-12-08 02:46 UTC)",
    ),
    (
        f.ClusterNotAnswering("", "2026-12-08T02:46:00+00:00", "connection refused"),
        "waiting for the home cluster: connection refused (since 2026-12-08 02:46 UTC)",
    ),
    (f.QuotaTooLow(1, 2), "the quota is 1 GPU now, so it cannot go down by 2"),
    (f.AboveLimit(5, 12, 16), "the quota is 5 GPUs now and may be at most 16; 5 +12 = 17"),
    (f.PermanentBelowZero(4, 5), "the permanent quota is 4 GPUs, so it cannot go down by 5"),
    (f.GrantAlreadyEnded(7), "the grant of GQ-7 has already ended"),
    (f.SourceShort("ns-a", 2, 3, own=False), "`ns-a` has 2 GPUs now, so it cannot give 3"),
    (f.SourceShort("ns-a", 2, 3, own=True), "`ns-a` has 2 GPUs of its own quota now, so it cannot give 3"),
    (f.SourceHasNone("ns-a"), "`ns-a` has no GPUs to give now"),
    (f.RefusedWhenApproved(f.QuotaTooLow(1, 2)), "refused when approved: the quota is 1 GPU now, so it cannot go down by 2"),
    (
        f.LegNotWritten(True, "ns-a", f.AsSaid("HTTP 403 <forbidden>")),
        "the source side (ns-a) could not be lowered: HTTP 403 &lt;forbidden&gt;",
    ),
    (
        f.LegNotWritten(False, "ns-b", f.SourceHasNone("ns-a")),
        "the target side (ns-b) could not be raised: `ns-a` has no GPUs to give now",
    ),
    (
        f.SourceKeptLowered(f.AsSaid("HTTP 422"), 8, 5),
        "HTTP 422; the source side stays lowered (8 -&gt; 5)",  # escaped, as the audit line always showed it
    ),
    (
        f.QuotaKeptChanging("gpu-quota", "ns-a", 8),
        "the quota gpu-quota in ns-a kept changing while the bot wrote it (8 conflicts in a row)",
    ),
    (
        f.ShiftLowersFirst(9, "ns-a"),
        "GQ-9 is lowering ns-a, whose quota was cut by hand meanwhile; the shift goes first",
    ),
    (f.AsSaid("<!channel> & co"), "&lt;!channel&gt; &amp; co"),
]


@pytest.mark.parametrize(("reason", "words"), WORDED, ids=lambda value: type(value).__name__)
def test_a_reason_reads_as_the_services_wrote_it_and_comes_back_from_its_stored_text(reason: f.FailureReason, words: str) -> None:
    stored = f.to_text(reason)
    assert stored.startswith(f.MARKER) and f.from_text(stored) == reason
    assert reasons.render(reason) == words


# Fields shown as words, not as they are: a moment is formatted for the reader, and the bot's English
# cause of a cluster's silence is shown to English readers only.
WORDED_FIELDS = {("since", f.ClusterNotAnswering), ("cause", f.ClusterNotAnswering)}


def said_as_is(reason: f.FailureReason) -> list[str]:
    """The names and other systems' words a reason holds (nested reasons' too), as typed and as escaped."""
    strings = [v for name, v in vars(reason).items() if isinstance(v, str) and (name, type(reason)) not in WORDED_FIELDS]
    strings += [s for v in vars(reason).values() if isinstance(v, f.FailureReason) for s in said_as_is(v)]
    return strings + [escape(s) for s in strings]


@pytest.mark.parametrize(("reason", "words"), WORDED, ids=lambda value: type(value).__name__)
def test_a_reason_reads_in_chinese_with_what_others_said_escaped_as_in_english(reason: f.FailureReason, words: str) -> None:
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        chinese = reasons.render(reason)
    assert missed == set()
    assert foreign_words(chinese, values=said_as_is(reason)) == []
    assert "<" not in chinese and ">" not in chinese
    assert [s for s in said_as_is(reason) if s in words and s not in chinese] == []
    if not isinstance(reason, f.AsSaid):
        assert chinese != words


def test_every_reason_kind_has_words() -> None:
    assert {type(reason) for reason, _ in WORDED} == set(f.FailureReason.kinds.values())


def test_a_reason_the_version_before_stored_as_text_is_read_as_said() -> None:
    old = "the cluster refused to let the bot patch (HTTP 403)"
    assert f.from_text(old) == f.AsSaid(old)
    assert reasons.render(f.from_text(old)) == old


def test_an_outbox_entry_recorded_with_a_text_reason_is_delivered_as_before() -> None:
    entry = {"message": "ApplyFailed", "fields": {"request_id": 4, "reason": "HTTP 403 <no>"}}
    said = from_json(entry)
    assert said == ApplyFailed(4, f.AsSaid("HTTP 403 <no>"))
    assert render(said).startswith(":x: Could not apply GQ-4: HTTP 403 &lt;no&gt;\nThe request is marked failed")
    typed = ApplyFailed(4, f.RefusedWhenApproved(f.AboveLimit(5, 12, 16)))
    assert from_json(to_json(typed)) == typed


@pytest.mark.parametrize(
    ("kind", "field", "words"),
    [
        ("WaitingForCluster", {"reason": "HTTP 503 <x>", "shift": True}, "waiting for the cluster: HTTP 503 &lt;x&gt;. The bot"),
        ("GrantNotPutBack", {"error": "HTTP 503 <x>"}, "could not be put back yet: HTTP 503 &lt;x&gt;. The bot keeps"),
        ("SourceNotRaised", {"source_namespace": "ns-a", "error": "HTTP 503"}, "*ns-a* could not be raised yet: HTTP 503"),
    ],
)
def test_a_waiting_entry_recorded_with_the_clusters_text_is_delivered_as_before(kind: str, field: dict, words: str) -> None:
    said = from_json({"message": kind, "fields": field})
    assert words in render(said)
    assert from_json(to_json(said)) == said


def test_a_quota_busy_reason_reaches_the_thread_in_its_words() -> None:
    waiting = WaitingForCluster(f.ShiftLowersFirst(9, "ns-a"), shift=False)
    assert from_json(to_json(waiting)) == waiting
    assert (
        "waiting for the cluster: GQ-9 is lowering ns-a, whose quota was cut by hand meanwhile; the shift goes first."
        in render(waiting)
    )
    assert render(GrantNotPutBack(f.QuotaKeptChanging("q", "ns-a", 8))).endswith(
        "(8 conflicts in a row). The bot keeps retrying."
    )
    assert render(SourceNotRaised("ns-a", f.AsSaid("HTTP 503"))).endswith("could not be raised yet: HTTP 503")


def test_an_audit_detail_is_worded_when_it_is_a_reason_and_shown_as_stored_otherwise() -> None:
    assert reasons.render_detail(f.to_text(f.GrantAlreadyEnded(3))) == "the grant of GQ-3 has already ended"
    assert reasons.render_detail("extends GQ-2 <x>") == "extends GQ-2 &lt;x&gt;"


def test_a_reason_without_words_is_a_type_error() -> None:
    @dataclasses.dataclass(frozen=True)
    class Unworded(f.FailureReason):
        pass

    try:
        with pytest.raises(TypeError, match="no words for Unworded"):
            reasons.render(Unworded())
    finally:
        del f.FailureReason.kinds["Unworded"]


@pytest.mark.parametrize("typed", ['{"reason": "typed by a person <x>"', '{"reason": "Nope"}', '{"detail": 1}', '{"detail":'])
def test_a_detail_a_person_typed_like_stored_json_is_shown_as_typed(typed: str) -> None:
    """A decision's reason is free text stored in the same column: text that only looks like JSON is as stored."""
    assert reasons.render_detail(typed) == typed.replace("<", "&lt;").replace(">", "&gt;")


def test_an_error_carrying_a_reason_says_it_in_words_in_logs_and_job_results() -> None:
    import bot.bootstrap  # noqa: F401  (lends the edge's wording, as every entry point does)
    from bot.domain.failure_reasons import QuotaKeptChanging
    from bot.services.quota_sync import QuotaBusy

    error = QuotaBusy(QuotaKeptChanging("compute-quota", "ns-a", 8))
    assert str(error) == "the quota compute-quota in ns-a kept changing while the bot wrote it (8 conflicts in a row)"
    assert error.delay == 1.0


def test_a_cluster_that_does_not_answer_is_a_typed_reason_worded_in_the_readers_language() -> None:
    since = datetime(2026, 12, 8, 2, 46, tzinfo=timezone.utc)
    reason = reason_of(ClusterUnavailable("us-2", since, "no answer for 4 s", delay=1.0))
    assert reason == f.ClusterNotAnswering("us-2", "2026-12-08T02:46:00+00:00", "no answer for 4 s")
    assert reasons.render(reason) == "waiting for cluster us-2: no answer for 4 s (since 2026-12-08 02:46 UTC)"
    with speaking(Language.ZH_CN):
        assert reasons.render(reason) == "集群 us-2 自 2026/12/8 02:46 UTC 起未响应"
