"""The request card, the status / list / audit lines, the forms and the App Home in English and in Chinese.

Every fixture is rendered in both languages. In Chinese nothing may be missing from the catalog and no
English word may be left once the fixture's own values (namespaces, team names, ids, what a person
typed, what another system said) are taken out; in both, every message is one Slack accepts (each
block parsed back and validated by slack_sdk's models, within Block Kit's limits) and every form
serialises through slack_sdk's View, which checks its limits.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bot.adapters import i18n
from bot.adapters.slack import approval_words, blocks, home, modals
from bot.adapters.slack.lists import listed, listed_text
from bot.adapters.slack.mrkdwn import render
from bot.domain.audit_details import to_text
from bot.domain.auto_notes import AutoApprovalNote, AutoRefusal
from bot.domain.commands import GpuAmount, RequestDraft
from bot.domain.failure_reasons import AsSaid
from bot.domain.input_problems import BadDuration, DurationFault, NotAGpuCount
from bot.domain.languages import Language
from bot.domain.lifecycle import GrantState, RequestKind, RequestState
from bot.domain.prices import Basis, BasisAsStored, Price
from bot.domain.priority import GpuPod, borrowed_class_warnings, pod_mix
from bot.domain.quota import CapacityImpact
from bot.services.outcomes import Confirmation
from bot.services.views import (
    AuditLine,
    GrantLine,
    HomeView,
    NamespaceStatus,
    PendingLine,
    PodsInView,
    QueueLine,
    ResourceChoice,
    ShiftSide,
    TeamSpendLine,
)
from tests.language_checks import catalog_misses, foreign_words
from tests.unit.test_blocks import NOW, assert_valid_message, card

LANGUAGES = [Language.EN, Language.ZH_CN]
MIG = "nvidia.com/mig-3g.40gb"
CJK = re.compile(r"[\u4e00-\u9fff]")

# What the fixtures show as it is: names, ids, what a person typed, what another system said.
VALUES = [
    "ai-frontier-research",
    "biz-model-serving",
    "Frontier research",
    "Business serving",
    "fine-tune on the new corpus",
    "for the grant",  # a cost basis as an earlier version stored it (shown as stored)
    "HTTP 403",
    "nodes are gone",
    "compute-quota",
    "research-low",
    "high-priority-business",
    "trainer-0",
    "trainer-1",
    "server-0",
    "a100-80gb",
    "research-pool",
    "request_submitted",
    "request_auto_approved",
    "amount",
    "delta",
    "duration",
    "a reason is needed",
    "needs more time",
    "&lt;!here&gt;",  # what a person typed, escaped as shown
]

PODS = [
    GpuPod("ai-frontier-research", "trainer-0", 2, "research-low", "Running", NOW - timedelta(hours=3)),
    GpuPod("ai-frontier-research", "trainer-1", 1, "high-priority-business", "Running", None),
    GpuPod("ai-frontier-research", "server-0", 1, "", "Running", NOW - timedelta(hours=1)),
    GpuPod("ai-frontier-research", "trainer-2", 4, "research-low", "Pending", None),
]
VALUES.append("trainer-2")
WARNINGS = borrowed_class_warnings(PODS, allowed=["research-low"], values={"research-low": 100, "high-priority-business": 10**6})
WITH_PODS = PodsInView(pod_mix(PODS), tuple(PODS), ("research-low",), tuple(WARNINGS))
UNREADABLE_PODS = PodsInView(pod_mix([]), error="HTTP 403")
SHIFT = ShiftSide("biz-model-serving", "Business serving", before=6, after=3, applied=False, returned=False, used=4)
APPROVED_NOTE = AutoApprovalNote(True, None, 1, 4 * 3600, 0, 4.0, 2, 4 * 3600, 8.0)
REFUSED_NOTE = AutoApprovalNote(False, AutoRefusal.TOO_MANY_ACTIVE, 1, 4 * 3600, 2, 8.0, 2, 4 * 3600, None)
ACTIVE_UNTIL = {"grant_ends_at": NOW + timedelta(days=3), "grant_state": GrantState.ACTIVE}

CARDS: dict[str, dict[str, Any]] = {
    "pending": {},
    "pending, two approvals needed, one given": {"approvals": ("U0LEE",), "approvals_required": 2},
    "approved": {"state": RequestState.APPROVED, "approvals": ("U0LEE",)},
    "applied": {"state": RequestState.APPLIED, "approvals": ("U0LEE",), "applied_from": 4, "applied_to": 8, **ACTIVE_UNTIL},
    "applied, auto-approved": {
        "state": RequestState.APPLIED,
        "auto_approved": True,
        "approvals": ("gpu-quota-bot",),
        "auto_note": APPROVED_NOTE,
        **ACTIVE_UNTIL,
    },
    "applied, grant ending": {"state": RequestState.APPLIED, **ACTIVE_UNTIL, "grant_state": GrantState.ENDING},
    "applied, grant ended": {"state": RequestState.APPLIED, **ACTIVE_UNTIL, "grant_state": GrantState.ENDED},
    "applied, auto-approved, grant ended": {
        "state": RequestState.APPLIED,
        "auto_approved": True,
        **ACTIVE_UNTIL,
        "grant_state": GrantState.ENDED,
    },
    "failed": {"state": RequestState.FAILED, "failure_reason": AsSaid("HTTP 403")},
    "failed, no reason": {"state": RequestState.FAILED},
    "denied": {"state": RequestState.DENIED, "denied_by": "U0LEE"},
    "cancelled": {"state": RequestState.CANCELLED},
    "expired": {"state": RequestState.EXPIRED},
    "not auto-approved": {"auto_note": REFUSED_NOTE},
    "a permanent decrease": {"delta": -3, "amount_text": "1", "duration": None, "cost": 5475.0},
    "permanent, more": {"duration": None},
    "a temporary decrease": {"delta": -1, "amount_text": "-1"},
    "no cost, no basis": {"cost": None, "cost_basis": None},
    "a decrease with no basis": {"delta": -1, "amount_text": "-1", "cost_basis": None},
    "oversubscribed": {"capacity": CapacityImpact(24, 28)},
    "unknown capacity, usage unknown": {"capacity": None, "used_before": None},
    "with pods and warnings": {"pods": WITH_PODS},
    "pods unreadable": {"pods": UNREADABLE_PODS},
    "no reason left": {"reason": "\x00"},
    "extension": {"kind": RequestKind.EXTENSION, "extends_id": 12, "delta": 4, "duration": timedelta(hours=12)},
    "MIG resource": {"resource": MIG, "amount_text": "+2", "delta": 2, "hard_before": 4},
    "MIG resource, one slice": {"resource": MIG, "amount_text": "+1", "delta": 1, "state": RequestState.APPLIED, **ACTIVE_UNTIL},
    "shared GPUs": {"resource": "nvidia.com/gpu.shared", "amount_text": "+2", "delta": 2},
    "another resource": {"resource": "amd.com/gpu", "amount_text": "+2", "delta": 2},
    "shift": {"shift": SHIFT, "delta": 3, "amount_text": "3", "pods": WITH_PODS},
    "shift, permanent": {"shift": SHIFT, "delta": 3, "amount_text": "3", "duration": None},
    "shift, source applied": {
        "shift": replace(SHIFT, applied=True, used=None),
        "delta": 3,
        "state": RequestState.APPROVED,
        "approvals": ("U0LEE", "U0PAT"),
    },
    "shift, applied, given back": {
        "shift": replace(SHIFT, applied=True, returned=True),
        "delta": 3,
        "state": RequestState.APPLIED,
        "applied_from": 4,
        "applied_to": 7,
        **ACTIVE_UNTIL,
        "grant_state": GrantState.ENDED,
    },
    "shift, the source team's copy": {"shift": SHIFT, "delta": 3, "thread_in": "C0BUSINESS", "cost": None},
    "shift, many pods in the source": {
        "shift": SHIFT,
        "delta": 3,
        "pods": PodsInView(
            pod_mix([]), tuple(GpuPod("biz-model-serving", f"server-{i}", 1, "", "Running", None) for i in range(12))
        ),
    },
}


def rendered(block_list: list[dict[str, Any]]) -> str:
    return json.dumps(block_list, ensure_ascii=False)


def shown(tree: object) -> str:
    """Every text a person reads in blocks or a view (the ``text`` of each text object), one per line."""
    if isinstance(tree, dict):
        return "\n".join(
            v if k == "text" and isinstance(v, str) else shown(v)
            for k, v in tree.items()
            if k == "text" or isinstance(v, dict | list)
        )
    if isinstance(tree, list):
        return "\n".join(shown(item) for item in tree)
    return ""


def check_words(language: Language, text: str, misses: set[tuple[Language, str]], *, values: list[str] = VALUES) -> None:
    """In Chinese: every sentence from the catalog, in Chinese, nothing left in English but the values."""
    if language == Language.EN:
        return
    assert misses == set()
    assert CJK.search(text), text
    assert foreign_words(text, values=values) == [], text


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
@pytest.mark.parametrize("name", list(CARDS))
def test_every_card_is_whole_in_each_language_and_slack_accepts_it(language: Language, name: str) -> None:
    fixture = card(**CARDS[name])
    with i18n.speaking(language), catalog_misses() as misses:
        message = blocks.request_message(fixture)
        fallback = blocks.request_fallback_text(fixture)
    assert_valid_message(message)
    check_words(language, shown(message) + "\n" + fallback, misses)


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
def test_a_card_says_the_same_things_in_either_language(language: Language) -> None:
    """The values stand in both: the request, the people, the namespace, the figures, the moment."""
    with i18n.speaking(language):
        text = rendered(blocks.request_message(card(pods=WITH_PODS)))
    for value in ("GQ-17", "<@U0ALICE>", "ai-frontier-research", "Frontier research", "4 → *8* (+4)", "<!date^", "research-low"):
        assert value in text, value
    assert ("3 天" in text) == (language == Language.ZH_CN) and ("*3d*" in text) == (language == Language.EN)


def test_a_typed_note_is_worded_in_the_language_and_an_old_one_shows_as_stored() -> None:
    with i18n.speaking(Language.ZH_CN):
        typed = approval_words.card_text(REFUSED_NOTE)
        old = approval_words.card_text("not auto-approved: the team is over its budget")
    assert typed.startswith("未自动批准：") and "2 块自动批准的 GPU" in typed
    assert old == "not auto-approved: the team is over its budget"  # an earlier version's words, as they were
    with i18n.speaking(Language.EN):
        assert approval_words.card_text(REFUSED_NOTE) == (
            "not auto-approved: the namespace already has 2 auto-approved GPUs active; 2 + 1 is more than 2"
            " (auto_approve: max 2 GPUs active, 4h)"
        )


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
@pytest.mark.parametrize("refused", [None, *AutoRefusal])
def test_every_auto_approval_note_is_worded_in_each_language(language: Language, refused: AutoRefusal | None) -> None:
    note = replace(REFUSED_NOTE, approved=refused is None, refused=refused, max_gpu_hours_per_day=6.5, resource=MIG)
    with i18n.speaking(language), catalog_misses() as misses:
        text = approval_words.card_text(note)
    assert text.startswith("auto-approved" if refused is None else "not auto-approved") or language != Language.EN
    check_words(language, text, misses)


# --- status, list and audit answers ----------------------------------------------------------------

QUEUE = QueueLine("a100-80gb", in_use=6, pending_workloads=1, cohort="research-pool", borrowed=2, borrowing_limit=4)
PENDING = PendingLine(21, "ai-frontier-research", "+2", 2, timedelta(days=1), "U0ALICE", 0, 1, NOW + timedelta(hours=20))
STATUSES = [
    NamespaceStatus(
        "ai-frontier-research",
        "Frontier research",
        "compute-quota",
        "nvidia.com/gpu",
        8,
        9,
        4,
        (GrantLine(17, 4, NOW + timedelta(days=3), GrantState.ACTIVE), GrantLine(9, -1, NOW, GrantState.ENDING)),
        (PENDING, replace(PENDING, request_id=22, duration=None, source_namespace="biz-model-serving", delta=1)),
        pods=WITH_PODS,
        reclaiming_since=NOW - timedelta(hours=2),
        queue=QUEUE,
    ),
    NamespaceStatus(
        "biz-model-serving", "Business serving", "compute-quota", MIG, 4, 4, 4, (), (), queue=replace(QUEUE, cohort=None)
    ),
    NamespaceStatus(
        "biz-model-serving",
        "Business serving",
        "compute-quota",
        "nvidia.com/gpu",
        4,
        5,
        4,
        (),
        (PENDING,),
        queue=replace(QUEUE, borrowing_limit=None, pending_workloads=3),
    ),
    NamespaceStatus("biz-model-serving", "Business serving", "compute-quota", "nvidia.com/gpu", None, None, None, (), ()),
    NamespaceStatus(
        "biz-model-serving",
        "Business serving",
        "compute-quota",
        "nvidia.com/gpu",
        None,
        None,
        None,
        (),
        (),
        error="nodes are gone",
    ),
    NamespaceStatus(
        "biz-model-serving", "Business serving", "compute-quota", "nvidia.com/gpu", 4, None, 4, (), (), pods=UNREADABLE_PODS
    ),
]
AUDIT = [
    AuditLine(
        NOW,
        "U0ALICE",
        "request_submitted",
        "ai-frontier-research",
        17,
        None,
        {"amount": "+4", "delta": 4},
        "fine-tune on the new corpus",
    ),
    AuditLine(NOW, "gpu-quota-bot", "request_auto_approved", "ai-frontier-research", 17, None, None, to_text(APPROVED_NOTE)),
    AuditLine(NOW, "U0LEE", "request_submitted", "ai-frontier-research", None, {"delta": 1}, {"delta": 2}, ""),
    AuditLine(NOW, "U0LEE", "request_submitted", None, None, {"delta": 1}, {"delta": 2}, "HTTP 403"),
]


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
def test_status_list_and_audit_lines_are_whole_in_each_language(language: Language) -> None:
    with i18n.speaking(language), catalog_misses() as misses:
        lines = [
            *blocks.status_lines(STATUSES),
            *[blocks.pending_line(p) for p in STATUSES[0].pending],
            *blocks.audit_lines(AUDIT),
        ]
        packed = blocks.lines_to_blocks(lines * 40, title=i18n.tr("Your requests"))
    assert_valid_message(packed)
    text = "\n".join(lines)
    assert "`a100-80gb`" in text and "`research-pool`" in text and "GQ-21" in text and "`2026-11-30 09:00Z`" in text
    check_words(language, text + shown(packed[-1:]), misses)
    if language == Language.ZH_CN:
        assert "机器人" in text and "已自动批准" in text  # the bot as actor, the typed detail in words


# --- forms ------------------------------------------------------------------------------------------

DRAFT = RequestDraft(
    namespace="ai-frontier-research",
    amount=GpuAmount(4, True),
    duration=timedelta(days=3),
    reason="fine-tune on the new corpus",
    problems=(NotAGpuCount("<!here>"), BadDuration("3x", DurationFault.NOT_A_DURATION)),
)
CHOICES = (
    ResourceChoice("nvidia.com/gpu", 8, 5),
    ResourceChoice(MIG, 4, None),
    ResourceChoice("nvidia.com/mig-1g.10gb", None, None),
)
FORMS = {
    "request": lambda: modals.request_form(
        DRAFT, ["ai-frontier-research", "biz-model-serving"], channel_id="C1", resources=CHOICES
    ),
    "request, typed namespace and resource": lambda: modals.request_form(
        replace(DRAFT, resource="r7", namespace=None),
        [f"ns-{i}" for i in range(150)],
        channel_id=None,
        resources=[ResourceChoice(f"vendor.example/r{i}", 1, 0) for i in range(101)],
    ),
    "request, empty": lambda: modals.request_form(RequestDraft(), ["ai-frontier-research"], channel_id=None),
    "shift": lambda: modals.shift_form(source="biz-model-serving", target="ai-frontier-research", gpus_moved=3),
    "extend": lambda: modals.extend_form(
        17, duration=timedelta(hours=12), reason="needs more time", problems=(BadDuration("0h", DurationFault.ZERO),)
    ),
    "deny": lambda: modals.deny_form(17),
}


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
@pytest.mark.parametrize("name", list(FORMS))
def test_every_form_is_whole_in_each_language_and_within_slacks_limits(language: Language, name: str) -> None:
    with i18n.speaking(language), catalog_misses() as misses:
        view = FORMS[name]().to_dict()  # serialising validates Slack's limits (titles of 24 characters, ...)
    text = shown(view)
    values = [*VALUES, *(f"r{i}" for i in range(101)), "vendor.example", "gpu", "mig-3g.40gb", "mig-1g.10gb"]
    check_words(language, text, misses, values=values)


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
def test_a_prefilled_duration_is_what_a_person_types_in_either_language(language: Language) -> None:
    """The parser reads the field back: it holds ``3d``, never the words ``3 天``."""
    with i18n.speaking(language):
        view = modals.request_form(DRAFT, ["ai-frontier-research"], channel_id=None).to_dict()
        extend = modals.extend_form(17, duration=timedelta(hours=12)).to_dict()
    inputs = {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}
    assert inputs["duration"]["initial_value"] == "3d"
    assert extend["blocks"][0]["element"]["initial_value"] == "12h"


CONFIRMATIONS = {
    "permanent decrease": {},
    "large temporary increase": {"delta": 9, "after": 13, "duration": timedelta(days=1), "grant_cost": 540.0, "large_above": 8},
    "permanent increase": {"delta": 2, "after": 6},
}


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
@pytest.mark.parametrize("name", list(CONFIRMATIONS))
def test_the_confirmation_form_is_whole_in_each_language(language: Language, name: str) -> None:
    values: dict[str, Any] = {
        "request_id": 17,
        "namespace": "ai-frontier-research",
        "team_label": "Frontier research",
        "requester_id": "U0PAT",
        "delta": -3,
        "duration": None,
        "before": 4,
        "after": 1,
        "monthly_cost": 5475.0,
        "grant_cost": None,
        # The price's words are prices.py's (checked where they are made): an earlier version's, as stored.
        "price": BasisAsStored("for the grant"),
        "currency": "USD",
        "approvals": 1,
        "approvals_required": 2,
        "large_above": None,
    }
    confirmation = Confirmation(**{**values, **CONFIRMATIONS[name]})
    with i18n.speaking(language), catalog_misses() as misses:
        view = modals.confirm_approval_form(confirmation).to_dict()
    text = shown(view)
    assert "<@U0PAT>" in text and "GQ-17" in view["title"]["text"]
    check_words(language, text, misses)


def test_the_confirmation_form_shows_a_typed_price_in_english_as_before() -> None:
    price = Price(2.5, Basis.RAN_ON, ("A100",), "USD", 7)
    view = modals.confirm_approval_form(
        Confirmation(17, "ns", "Team", "U1", -3, None, 4, 1, 5475.0, None, price, "USD", 1, 2, None)
    ).to_dict()
    assert "saves 5,475.00 USD per month\\nat 2.50 USD/h, the A100 price this namespace ran on" in json.dumps(view)


# --- the App Home -----------------------------------------------------------------------------------


def home_fixture(**changes: Any) -> HomeView:
    base = HomeView(
        user_id="U0LEE",
        currency="USD",
        quotas=tuple(STATUSES[:2]),
        spend=(
            TeamSpendLine("Frontier research", "2026-11", 1200.0, 5000.0),
            TeamSpendLine("Business serving", "2026-11", 1.0, 0.0),
        ),
        mine=(PENDING,),
        to_decide=tuple(replace(PENDING, request_id=100 + i) for i in range(13)),
    )
    return replace(base, **changes)


HOMES = {
    "everything": {},
    "nothing": {"quotas": (), "spend": (), "mine": (), "to_decide": ()},
}


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
@pytest.mark.parametrize("name", list(HOMES))
def test_the_app_home_is_whole_in_each_language_and_slack_accepts_it(language: Language, name: str) -> None:
    with i18n.speaking(language), catalog_misses() as misses:
        view = home.home_view(home_fixture(**HOMES[name]))
    assert view["type"] == "home"
    assert_valid_message(view["blocks"])  # a Home tab holds 100 blocks; the bot keeps to a message's 50
    for block in view["blocks"]:
        assert Block.parse(block) is not None
    text = shown(view["blocks"])
    check_words(language, text, misses)
    if name == "everything":
        assert "GQ-110" in text and "GQ-112" in text  # the ones beyond the ten shown, by id
        assert "24%" in text


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda language: language.value)
def test_the_app_homes_buttons_and_headers_are_plain_text_in_the_language(language: Language) -> None:
    with i18n.speaking(language):
        view = home.home_view(home_fixture())
    headers = [b["text"]["text"] for b in view["blocks"] if b["type"] == "header"]
    labels = [e["text"]["text"] for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]]
    expected = {Language.EN: ("GPU quota", "Approve", "Deny"), Language.ZH_CN: ("GPU 配额", "批准", "拒绝")}[language]
    assert headers[0] == expected[0] and labels[:2] == list(expected[1:])


def test_lists_use_the_languages_separator() -> None:
    with i18n.speaking(Language.ZH_CN):
        assert listed_text(["a", "b", "c"]) == "a、b、c"
        assert render(listed(["<a>", "b"])) == "&lt;a&gt;、b"
    assert listed_text(["a", "b", "c"]) == "a, b, c" and listed_text([]) == ""


def test_a_card_from_an_earlier_version_keeps_its_stored_words() -> None:
    old = "auto-approved: 1 GPU for 4h within auto_approve (max 1 GPU active, 4h)"
    with i18n.speaking(Language.ZH_CN):
        message = blocks.request_message(card(auto_note=old, cost_basis=BasisAsStored("per month, at 2.50 USD/h")))
    contexts = [b["elements"][0]["text"] for b in message if b["type"] == "context"]
    assert old in contexts
    assert "per month, at 2.50 USD/h" in rendered(message)
