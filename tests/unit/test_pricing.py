"""One price list everywhere (issue 10): a request's cost, the confirmation form and the idle nudge use the
price of the GPU models concerned, say which, and a price change applies from the day it is made."""

from __future__ import annotations

import json
from datetime import date, timedelta

from bot.adapters.slack import blocks
from bot.adapters.slack.prices import render_basis, render_price
from bot.domain.commands import parse_command
from bot.domain.prices import Basis
from bot.errors import TemporaryError
from bot.sandbox.history import A100, H100
from bot.services.pricing import Pricer
from tests.unit.test_jobs import Jobs, make_jobs, policy_dict

NODE_H100, NODE_A100 = "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"  # as GPU feature discovery labels nodes


def submit(jobs: Jobs, text: str, user: str = "U0ALICE") -> int:
    return jobs.services.submissions.submit(requester=user, draft=parse_command(text).draft).request_id  # type: ignore[union-attr]


def pricer(jobs: Jobs) -> Pricer:
    assert jobs.services.pricer is not None
    return jobs.services.pricer


def card_text(jobs: Jobs) -> str:
    card = next(s.card for s in reversed(jobs.notifier.sent) if s.card is not None)
    return json.dumps(blocks.request_message(card), ensure_ascii=False)


def test_a_requests_cost_uses_the_price_of_the_model_the_namespace_ran_on() -> None:
    jobs = make_jobs(policy_dict())
    assert jobs.services.ledger is not None
    jobs.services.ledger.catch_up(date(2026, 11, 9))  # frontier ran on A100s (2.00 an hour; the default is 1.00)
    request_id = submit(jobs, "request ai-frontier-research +2 for 6h sweep")
    row = jobs.database.run(lambda repo: repo.request(request_id))
    assert row is not None and row.cost == 24.0  # 2 GPUs x 6 h x 2.00, not 12.00 at the default price
    assert render_basis(row.cost_basis, row.namespace) == f"for the grant, at 2.00 USD/h, the {A100} price this namespace ran on"
    assert f"24.00 USD for the grant, at 2.00 USD/h, the {A100} price this namespace ran on" in card_text(jobs)


def test_without_recent_use_the_dearest_model_on_the_nodes_prices_it() -> None:
    jobs = make_jobs(policy_dict())  # nothing in the ledger yet
    jobs.cluster.models = {NODE_A100, NODE_H100, "Tesla-T4"}  # T4: not in the price list
    request_id = submit(jobs, "request ai-frontier-research +1 for 10h eval")
    row = jobs.database.run(lambda repo: repo.request(request_id))
    assert row is not None and row.cost == 40.0  # 1 x 10 h x 4.00 (H100)
    worded = render_basis(row.cost_basis, row.namespace)
    assert worded == f"for the grant, at 4.00 USD/h, the {H100} price (the most expensive GPU this namespace may get)"


def test_unknown_models_fall_back_to_the_default_price() -> None:
    jobs = make_jobs(policy_dict())
    jobs.cluster.models = {"Tesla-T4"}
    assert pricer(jobs).price("ai-frontier-research").basis == Basis.DEFAULT


def test_unreadable_nodes_fall_back_to_the_default_price() -> None:
    jobs = make_jobs(policy_dict())
    jobs.cluster.models = {NODE_H100}
    jobs.cluster.fail("nodes", TemporaryError("list nodes: 503"))
    price = pricer(jobs).price("ai-frontier-research")
    assert (price.per_gpu_hour, render_price(price)) == (1.0, "at 1.00 USD/h, the default price")


def test_a_mix_of_models_is_priced_by_their_gpu_hours() -> None:
    jobs = make_jobs(policy_dict())
    assert jobs.services.ledger is not None
    jobs.services.ledger.catch_up(date(2026, 11, 9))
    # 3-8 Nov: 6 x 48 = 288 A100 GPU-hours; 9 Nov replaced by 288 H100 GPU-hours: (288 x 2 + 288 x 4) / 576 = 3.
    nov9 = date(2026, 11, 9)
    jobs.database.run(
        lambda repo: repo.replace_ledger_day(
            nov9,
            status="recorded",
            recorded_at=jobs.clock.now(),
            ksm_spacing=None,
            dcgm_spacing=None,
            entries=[entry(nov9, "ai-frontier-research", H100, 288.0)],
        )
    )
    price = pricer(jobs).price("ai-frontier-research")
    assert price.basis == Basis.RAN_ON and abs(price.per_gpu_hour - 3.0) < 1e-9
    assert render_price(price) == f"at 3.00 USD/h, the average price of the {A100}, {H100} this namespace ran on (last 7 days)"


def entry(day: date, namespace: str, model: str, hours: float) -> dict[str, object]:
    return {
        "day": day,
        "namespace": namespace,
        "model": model,
        "team": "frontier",
        "cost_center": None,
        "allocated_hours": hours,
        "idle_hours": 0.0,
        "observed_hours": hours,
        "util_hours": 0.0,
        "price": 0.0,
        "cost": 0.0,
        "idle_cost": 0.0,
    }


def test_the_idle_nudge_says_which_price_it_used() -> None:
    jobs = make_jobs(policy_dict())
    assert jobs.services.ledger is not None and jobs.services.idle is not None
    jobs.services.ledger.catch_up(date(2026, 11, 9))
    assert jobs.services.idle.check() == ["biz-model-serving"]
    nudge = next(s for s in jobs.notifier.of("post") if s.target == "C0BIZ")
    assert f"about 24 idle GPU-hours, 96.00 USD (at 4.00 USD/h, the {H100} price this namespace ran on)" in nudge.text


def test_the_idle_nudge_of_a_new_namespace_uses_the_nodes_price_not_the_default() -> None:
    raw = policy_dict()
    raw["pricing"]["models"][H100] = 4.80  # the example: an H100 at 4.80 an hour
    jobs = make_jobs(raw)
    jobs.cluster.models = {NODE_H100}
    assert jobs.services.idle is not None
    assert jobs.services.idle.check() == ["biz-model-serving"]
    nudge = next(s for s in jobs.notifier.of("post") if s.target == "C0BIZ")
    assert "about 24 idle GPU-hours, 115.20 USD (at 4.80 USD/h" in nudge.text  # 4 GPUs x 6 h x 4.80, not 24.00


def test_a_price_change_applies_from_the_day_it_is_made() -> None:
    before = make_jobs(policy_dict())
    assert before.services.ledger is not None
    before.services.ledger.catch_up(date(2026, 11, 9))  # 1-9 Nov at 2.00 an A100-hour: 48 GPU-h x 2.00 = 96 a day

    raw = policy_dict()
    raw["pricing"]["models"][A100] = 3.0  # the price changes on 10 Nov
    before.clock.advance(timedelta(days=1))
    after = make_jobs(raw, database=before.database, clock=before.clock)
    assert after.services.ledger is not None
    after.services.ledger.catch_up(date(2026, 11, 10))
    costs = after.services.ledger.team_day_costs(date(2026, 11, 1), date(2026, 11, 10))["frontier"]
    assert [round(costs[date(2026, 11, d)], 6) for d in range(1, 10)] == [96.0] * 9  # last week's cost unchanged
    assert round(costs[date(2026, 11, 10)], 6) == 144.0  # 48 x 3.00 from the day of the change
    # New requests use today's price list for the models it ran on.
    assert pricer(after).price("ai-frontier-research").per_gpu_hour == 3.0
