"""Audit details: typed, stored as JSON in the audit ``detail`` column, worded on the audit trail in the
words the services used to write; a detail the version before wrote as text is shown exactly as stored."""

from __future__ import annotations

import pytest

from bot.adapters.slack.reasons import render_detail
from bot.domain import audit_details as d

WORDED = [
    (d.ReclaimStarted(5, 2), "5 GPUs in use above the new quota of 2: running pods keep them until they finish"),
    (d.ReclaimCovered(), "the quota was raised to cover what is in use"),
    (d.ReclaimGone(), "the quota or the namespace is gone"),
    (d.ReclaimRaisedByHand(), "the quota was raised over usage by hand"),
    (d.ReclaimFreed(1, 2 * 24 * 60 + 4 * 60 + 59), "1 GPU freed over 2 days 4 h as jobs finished"),
]


@pytest.mark.parametrize(("detail", "words"), WORDED, ids=lambda value: type(value).__name__)
def test_a_detail_reads_as_the_services_wrote_it_and_comes_back_from_its_stored_text(detail: d.AuditDetail, words: str) -> None:
    stored = d.to_text(detail)
    assert stored.startswith(d.MARKER) and d.from_text(stored) == detail
    assert render_detail(stored) == words


def test_every_detail_kind_has_words() -> None:
    assert {type(detail) for detail, _ in WORDED} == set(d.AuditDetail.kinds.values())


def test_a_detail_the_version_before_wrote_as_text_is_shown_as_stored() -> None:
    old = "4 GPUs in use above the new quota of 1: running pods keep them until they finish"
    assert render_detail(old) == old
