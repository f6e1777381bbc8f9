"""Weekly proposals from a known 14-day history on a real Prometheus (Debian's 2.42): the ledger's
GPU-hours and utilisation, Prometheus's peak allocation, blocked-workload alerts counted from real
``FailedCreate`` events through the real kubernetes client; posted in the admin channel of the Slack
stand-in with a [Propose shift] button clicked over signed HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.adapters.prometheus import PrometheusMetrics
from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.sandbox.history import A100, H100, History, PodRun
from bot.sandbox.kube_api import quota_refusal_event
from bot.sandbox.session import Sandbox
from bot.sandbox.world import sandbox_policy
from tests.integration.conftest import SlackOverHttp, serve
from tests.prometheus_server import PrometheusServer, binaries_available

UTC = timezone.utc
FIRST = datetime(2026, 11, 1, tzinfo=UTC)
LAST = datetime(2026, 11, 15, tzinfo=UTC)  # the 14 finished days before NOW
NOW = datetime(2026, 11, 15, 8, tzinfo=UTC)
STEP = timedelta(minutes=5)
FRONTIER, BUSINESS = "ai-frontier-research", "biz-model-serving"


def fourteen_days() -> History:
    """Frontier: one GPU around the clock at 20 %, a second one from midnight to noon at 53 %: at most
    2 GPUs, 1.5 on average, (0.2 x 24 + 0.53 x 12) / 36 = 31 % busy. Business: all 16 GPUs, 90 % busy."""
    history = History(step=STEP, start=FIRST, end=LAST)
    history.pods += [
        PodRun(FRONTIER, "explore", 1, "gpu-node-a", A100, FIRST, LAST, 0.2),
        PodRun(BUSINESS, "serve", 16, "gpu-node-b", H100, FIRST, LAST, 0.9),
    ]
    for day in range(14):
        start = FIRST + timedelta(days=day)
        history.pods.append(PodRun(FRONTIER, f"sweep-{day}", 1, "gpu-node-a", A100, start, start + timedelta(hours=12), 0.53))
    return history


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus")).load(fourteen_days())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def slack(prometheus: PrometheusServer) -> Iterator[SlackOverHttp]:
    policy = sandbox_policy().model_copy(
        update={"schedules": sandbox_policy().schedules.model_copy(update={"proposals": "0 8 * * 1"})}
    )
    metrics = PrometheusMetrics.connect(prometheus.url, interval=STEP, idle_threshold=0.05)
    box = Sandbox(policy=policy, clock=ManualClock(FIRST + timedelta(hours=9)), metrics=metrics, kube_timeout=(2.0, 2.0)).start()
    url, server = serve(WebApp(box.app))
    yield SlackOverHttp(box, url)
    server.close()
    box.stop()


def block_business_17_times(slack: SlackOverHttp) -> None:
    """17 workloads refused by the full business quota over the first 9 days, seen by the blocked-workload job."""
    assert slack.sandbox.kube is not None and slack.sandbox.services is not None
    clock = slack.sandbox.clock
    assert isinstance(clock, ManualClock)
    for number in range(17):
        slack.sandbox.kube.add_event(quota_refusal_event(BUSINESS, "Job", f"retrain-{number}", requested=2, used=16, limited=16))
        slack.sandbox.services.blocked.check()
        if number % 2:
            clock.advance(timedelta(days=1))
    slack.sandbox.services.blocked.check()  # seen again: counted once each
    clock.advance(NOW - clock.now())


def test_a_proposal_from_a_known_fortnight_with_the_numbers_behind_it(slack: SlackOverHttp) -> None:
    block_business_17_times(slack)
    assert slack.sandbox.services is not None and slack.sandbox.services.proposals is not None
    run = slack.sandbox.services.proposals.run()
    assert [(p.source.namespace, p.target.namespace, p.gpus) for p in run.proposals] == [(FRONTIER, BUSINESS, 2)]
    [posted] = slack.channel_messages("C0PLATFORM")
    assert posted.text == (
        ":bulb: Proposal 1 of 1 (last 14 days): shift *2 GPUs* from *ai-frontier-research* to *biz-model-serving*. "
        "ai-frontier-research used at most 2 of 4 GPUs (1.5 on average), 31 % busy; "
        "biz-model-serving was blocked by quota 17 times. Nothing changes unless a shift is requested and approved."
    )
    button = slack.buttons(posted)["Propose shift"]
    assert button["value"] == f"{FRONTIER}:{BUSINESS}:2"

    assert slack.sandbox.services.proposals.run().skipped == "already posted today"  # once, whoever runs it
    slack.click("U0PAT", button, posted)  # opens the shift form prefilled; never applies anything
    prefilled = slack.records("view_open")[-1].view
    initial = {b["block_id"]: b["element"].get("initial_value") for b in prefilled["blocks"]}
    assert (prefilled["callback_id"], initial["gpus"], initial["source"], initial["target"]) == (
        "gq_shift_form",
        "2",
        FRONTIER,
        BUSINESS,
    )
    assert slack.sandbox.kube is not None
    assert slack.sandbox.kube.hard(FRONTIER, "compute-quota") == "4"
    assert slack.sandbox.kube.hard(BUSINESS, "compute-quota") == "16"
    assert slack.sandbox.kube.quota_writes() == 0


def test_no_proposal_when_no_team_was_blocked(slack: SlackOverHttp) -> None:
    clock = slack.sandbox.clock
    assert isinstance(clock, ManualClock) and slack.sandbox.services is not None and slack.sandbox.services.proposals
    clock.advance(NOW - clock.now())
    run = slack.sandbox.services.proposals.run()
    assert run.proposals == [] and run.skipped
    assert slack.channel_messages("C0PLATFORM") == []


def test_no_proposal_from_days_the_metrics_did_not_see(tmp_path: Path) -> None:
    """Prometheus has nothing for the fortnight (scrapes lost): "used at most 0 of 4 GPUs" would be a guess."""
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    empty = PrometheusServer(tmp_path).start()
    policy = sandbox_policy().model_copy(
        update={"schedules": sandbox_policy().schedules.model_copy(update={"proposals": "0 8 * * 1"})}
    )
    metrics = PrometheusMetrics.connect(empty.url, interval=STEP, idle_threshold=0.05)
    box = Sandbox(policy=policy, clock=ManualClock(FIRST + timedelta(hours=9)), metrics=metrics, kube_timeout=(2.0, 2.0)).start()
    url, server = serve(WebApp(box.app))
    try:
        slack = SlackOverHttp(box, url)
        block_business_17_times(slack)
        assert box.services is not None and box.services.proposals is not None

        run = box.services.proposals.run()

        assert run.proposals == [] and run.skipped == "only 0 of the last 14 days were measured"
        assert slack.channel_messages("C0PLATFORM") == []
    finally:
        server.close()
        box.stop()
        empty.stop()
