"""Audit details: typed, stored as JSON in the audit ``detail`` column, worded on the audit trail in the
words the services used to write; a detail the version before wrote as text is shown exactly as stored."""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum

import pytest

from bot.adapters.i18n import speaking
from bot.adapters.slack.reasons import render_detail
from bot.domain import audit_details as d
from bot.domain.auto_notes import AutoApprovalNote, AutoRefusal
from bot.domain.languages import Language
from bot.domain.resources import GPU, quota_key
from tests.language_checks import catalog_misses, foreign_words

WORDED = [
    (d.ReclaimStarted(5, 2), "5 GPUs in use above the new quota of 2: running pods keep them until they finish"),
    (d.ReclaimCovered(), "the quota was raised to cover what is in use"),
    (d.ReclaimGone(), "the quota or the namespace is gone"),
    (d.ReclaimRaisedByHand(), "the quota was raised over usage by hand"),
    (d.ReclaimFreed(1, 2 * 24 * 60 + 4 * 60 + 59), "1 GPU freed over 2 days 4 h as jobs finished"),
    (d.HandEditAdopted(-2), "the quota was changed outside the bot by -2 GPUs; adopted into the base"),
    (d.QuotaWritten("compute-quota", 4, 6), "compute-quota: requests.nvidia.com/gpu 4 -&gt; 6"),  # escaped, as always shown
    (d.QuotaWritten("compute-quota", None, 6), "compute-quota: requests.nvidia.com/gpu none -&gt; 6"),
    (d.QuotaWritten("frontier-batch", 4, 6, flavor="a100"), "frontier-batch: nominalQuota of nvidia.com/gpu (a100) 4 -&gt; 6"),
    (d.NamespaceFirstSeen(has_quota=True), "first seen by the bot"),
    (d.NamespaceFirstSeen(has_quota=False), "first seen by the bot; no GPU quota in the cluster yet"),
    (d.GrantEnding(4, datetime(2026, 3, 1, 9, 5, tzinfo=timezone.utc)), "+4 GPUs, due 2026-03-01 09:05 UTC"),
    (d.Extends(12), "extends GQ-12"),
    (d.SourceGave(3, "ns-b"), "gave 3 GPUs to ns-b"),
    (d.SourceGivenBack("ns-b", True, 3), "the shift to ns-b ended; 3 GPUs back"),
    (d.SourceGivenBack("ns-b", False, 3), "the shift to ns-b failed; 3 GPUs back"),
    (
        AutoApprovalNote(True, None, 1, 4 * 3600, 0, 4.0, 1, 4 * 3600, None),
        "auto-approved: 1 GPU for 4h within auto_approve (max 1 GPU active, 4h)",
    ),
    (
        AutoApprovalNote(False, AutoRefusal.OVER_BUDGET, 1, 4 * 3600, 0, 4.0, 2, 4 * 3600, 8.0),
        "not auto-approved: the team is over its budget (auto_approve: max 2 GPUs active, 4h, 8 GPU-hours a day)",
    ),
]


@pytest.mark.parametrize(
    ("detail", "words"), WORDED, ids=lambda value: type(value).__name__ if isinstance(value, d.AuditDetail) else ""
)
def test_a_detail_reads_as_the_services_wrote_it_and_comes_back_from_its_stored_text(detail: d.AuditDetail, words: str) -> None:
    stored = d.to_text(detail)
    assert stored.startswith(d.MARKER) and d.from_text(stored) == detail
    assert render_detail(stored) == words


@pytest.mark.parametrize(
    ("detail", "words"), WORDED, ids=lambda value: type(value).__name__ if isinstance(value, d.AuditDetail) else ""
)
def test_a_detail_reads_in_chinese(detail: d.AuditDetail, words: str) -> None:
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        chinese = render_detail(d.to_text(detail))
    assert missed == set()
    # What is shown as it is (an enum is worded, and so are whole GPUs: "块 GPU").
    names = [v for v in vars(detail).values() if isinstance(v, str) and not isinstance(v, Enum) and v != GPU]
    names += [quota_key(detail.resource)] if isinstance(detail, d.QuotaWritten) and detail.flavor is None else []
    assert chinese != words and foreign_words(chinese, values=names) == []
    assert [name for name in names if name not in chinese] == []


def test_every_detail_kind_has_words() -> None:
    assert {type(detail) for detail, _ in WORDED} == set(d.AuditDetail.kinds.values())


def test_a_detail_the_version_before_wrote_as_text_is_shown_as_stored() -> None:
    old = "4 GPUs in use above the new quota of 1: running pods keep them until they finish"
    assert render_detail(old) == old
