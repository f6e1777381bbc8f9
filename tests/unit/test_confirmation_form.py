"""The approval form's builder, on its own: what an approver confirms, within Slack's limits."""

from __future__ import annotations

import json
from datetime import timedelta

from bot.adapters.slack import ids, modals
from bot.domain.policy import needs_confirmation, parse_policy
from bot.domain.prices import Basis, Price
from bot.services.outcomes import Confirmation


def confirmation(**changes: object) -> Confirmation:
    values: dict[str, object] = {
        "request_id": 123456,
        "namespace": "ai-frontier-research",
        "team_label": "Frontier research",
        "requester_id": "U0PAT",
        "delta": -3,
        "duration": None,
        "before": 4,
        "after": 1,
        "monthly_cost": 5475.0,
        "grant_cost": None,
        "price": Price(2.5, Basis.RAN_ON, ("<b>A100</b>",), "USD", 7),
        "currency": "USD",
        "approvals": 1,
        "approvals_required": 2,
        "large_above": None,
    }
    values.update(changes)
    return Confirmation(**values)  # type: ignore[arg-type]


def test_the_form_shows_the_change_its_cost_and_carries_the_request() -> None:
    view = modals.confirm_approval_form(confirmation()).to_dict()  # serialising validates Slack's limits
    text = json.dumps(view, ensure_ascii=False)
    assert view["callback_id"] == ids.CONFIRM_APPROVAL_FORM and view["submit"]["text"] == "Approve"
    assert json.loads(view["private_metadata"]) == {"request_id": 123456, "language": "en"}
    assert "4 → *1* (-3)" in text and "saves 5,475.00 USD per month" in text
    assert "a permanent change" in text and "1 of 2 approvals so far" in text
    assert "at 2.50 USD/h, the &lt;b&gt;A100&lt;/b&gt; price this namespace ran on" in text  # the basis, escaped


def test_a_large_temporary_change_shows_both_costs() -> None:
    view = modals.confirm_approval_form(
        confirmation(delta=9, after=13, duration=timedelta(days=1), monthly_cost=16425.0, grant_cost=540.0, large_above=8)
    ).to_dict()
    text = json.dumps(view, ensure_ascii=False)
    assert "16,425.00 USD per month" in text and "540.00 USD for the grant" in text
    assert "a large change (more than 8 GPUs)" in text and "for *1d*" in text


def test_which_changes_need_the_form() -> None:
    base = {"channel": "C1", "namespaces": ["ns"], "approvers": {"users": ["U1"]}}
    team = parse_policy({"teams": {"t": {**base, "approvals": {"large_change": {"above_gpus": 8, "required": 2}}}}}).teams["t"]
    assert needs_confirmation(team, delta=1, permanent=True)
    assert needs_confirmation(team, delta=-9, permanent=False)
    assert not needs_confirmation(team, delta=8, permanent=False)
    no_large = parse_policy({"teams": {"t": base}}).teams["t"]
    assert not needs_confirmation(no_large, delta=40, permanent=False)
