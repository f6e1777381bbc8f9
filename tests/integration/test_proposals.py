"""Weekly proposals from a known 14-day history on a real Prometheus (Debian's 2.42): the ledger's
GPU-hours and utilisation, Prometheus's peak allocation and the quotas' saturation (kube-state-metrics'
``kube_resourcequota`` used against hard), blocked-workload alerts counted from real ``FailedCreate``
events through the real kubernetes client; posted in the admin channel of the Slack stand-in with a
[Propose shift] button clicked over signed HTTP."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from importlib import resources
from pathlib import Path

import pytest
import yaml

from bot.adapters.prometheus import PrometheusMetrics
from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.domain.policy import Policy, parse_policy
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from bot.sandbox.httpserver import Incoming, LoopbackServer, Outgoing
from bot.sandbox.kube_api import quota_refusal_event
from bot.sandbox.session import Sandbox
from bot.sandbox.world import sandbox_policy
from bot.services.proposals import ProposalService
from tests.integration.conftest import SlackOverHttp, serve
from tests.prometheus_server import PrometheusServer, binaries_available, forward

UTC = timezone.utc
FIRST = datetime(2026, 11, 1, tzinfo=UTC)
LAST = datetime(2026, 11, 15, tzinfo=UTC)  # the 14 finished days before NOW
NOW = datetime(2026, 11, 15, 8, tzinfo=UTC)
STEP = timedelta(minutes=5)
FRONTIER, BUSINESS = "ai-frontier-research", "biz-model-serving"
BATCH, LAB = "vision-batch", "vision-lab"  # a third team's two namespaces (the saturation history)


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
    assert posted.text == (  # this Prometheus holds no kube_resourcequota series: the alerts alone tell
        ":bulb: Proposal 1 of 1 (last 14 days): shift *2 GPUs* from *ai-frontier-research* to *biz-model-serving*. "
        "ai-frontier-research used at most 2 of 4 GPUs (1.5 on average), 31 % busy; "
        "biz-model-serving was blocked by quota 17 times (the bot's alerts). "
        "Nothing changes unless a shift is requested and approved."
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
    assert run.proposals == []
    assert run.skipped == (
        "no sign of a shortage: no quota-blocked alerts in the last 14 days and no kube_resourcequota series in Prometheus"
    )
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


# --- the quotas' saturation from Prometheus: a bot with no alerts of its own ---------------------


def saturated_fortnight() -> History:
    """Quotas as kube-state-metrics exported them for the fortnight, with a known time at the quota:

    - business (16): 12 GPUs around the clock and 4 more from 00:00 to 22:00 every day: at its quota
      22 of every 24 hours, 91.7 %;
    - vision-batch (8): 6 GPUs around the clock and 2 more from 12:00 to 13:00: at its quota 1 hour a
      day, 4.2 % (briefly: not short, and it needed its quota, so it gives nothing);
    - frontier (4): at most 2 GPUs (as in ``fourteen_days``), 2 spare; vision-lab (4): 1 GPU, 3 spare.
    """
    history = fourteen_days()
    history.quotas = {FRONTIER: 4, BUSINESS: 16, BATCH: 8, LAB: 4}
    history.pods = [pod for pod in history.pods if pod.namespace != BUSINESS]
    history.pods += [
        PodRun(BUSINESS, "serve", 12, "gpu-node-b", H100, FIRST, LAST, 0.9),
        PodRun(BATCH, "pipeline", 6, "gpu-node-c", H100, FIRST, LAST, 0.7),
        PodRun(LAB, "notebook", 1, "gpu-node-d", A100, FIRST, LAST, 0.3),
    ]
    for day in range(14):
        start = FIRST + timedelta(days=day)
        history.pods += [
            PodRun(BUSINESS, f"train-{day}", 4, "gpu-node-e", H100, start, start + timedelta(hours=22), 0.8),
            PodRun(BATCH, f"burst-{day}", 2, "gpu-node-c", H100, start + timedelta(hours=12), start + timedelta(hours=13), 0.6),
        ]
    return history


def three_team_policy() -> Policy:
    """The sandbox policy with a third team (vision) of two namespaces, proposals on."""
    text = resources.files("bot.sandbox").joinpath("policy.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    raw["teams"]["vision"] = {
        "display_name": "Vision",
        "channel": "C0GENERAL",
        "namespaces": [BATCH, LAB],
        "approvers": {"users": ["U0DANA"]},
    }
    raw.setdefault("schedules", {})["proposals"] = "0 8 * * 1"
    return parse_policy(raw, source="three teams")


class QuotaQueriesRefused:
    """Prometheus behind a proxy that refuses the queries reading ``kube_resourcequota`` as a loaded
    Prometheus refuses a subquery too big for it (HTTP 422), and forwards every other query."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.refused = 0
        self._server = LoopbackServer(self._forward).start()
        self.url = self._server.url

    def _forward(self, incoming: Incoming) -> Outgoing:
        if b"kube_resourcequota" in incoming.body or "kube_resourcequota" in incoming.query.get("query", ""):
            self.refused += 1
            body = b'{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}'
            return Outgoing(422, body, {"Content-Type": "application/json"})
        return forward(self.target, incoming)

    def stop(self) -> None:
        self._server.stop()


@pytest.fixture(scope="module")
def saturated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("saturated")).load(saturated_fortnight())
    server.start()
    yield server
    server.stop()


@contextmanager
def three_teams(url: str, clock: ManualClock) -> Iterator[SlackOverHttp]:
    """The sandbox on the three-team policy, the vision quotas added to the cluster, over ``url``'s Prometheus."""
    metrics = PrometheusMetrics.connect(url, interval=STEP, idle_threshold=0.05)
    box = Sandbox(policy=three_team_policy(), clock=clock, metrics=metrics, kube_timeout=(2.0, 2.0)).start()
    assert box.kube is not None
    for namespace, hard, used in ((BATCH, 8, 6), (LAB, 4, 1)):
        box.kube.add_namespace(namespace)
        box.kube.add_quota(namespace, "compute-quota", {"requests.nvidia.com/gpu": str(hard)}, used_gpus=used)
    app_url, server = serve(WebApp(box.app))
    try:
        yield SlackOverHttp(box, app_url)
    finally:
        server.close()
        box.stop()


def proposals_of(slack: SlackOverHttp) -> ProposalService:
    services = slack.sandbox.services
    assert services is not None and services.proposals is not None
    return services.proposals


def test_a_bot_without_alerts_proposes_from_the_quotas_saturation_in_prometheus(saturated: PrometheusServer) -> None:
    """Installed today: no alert in its database, yet Prometheus holds the fortnight. Business sat at its quota
    92 % of the time and is proposed both sources' GPUs; vision-batch was at its quota 4 % of the time and is
    not (were it short, frontier's 2 GPUs would go to it, round-robin)."""
    with three_teams(saturated.url, ManualClock(NOW)) as slack:
        run = proposals_of(slack).run()

        assert [(p.source.namespace, p.target.namespace, p.gpus) for p in run.proposals] == [
            (LAB, BUSINESS, 3),
            (FRONTIER, BUSINESS, 2),
        ]
        first, second = slack.channel_messages("C0PLATFORM")
        assert first.text.startswith(
            ":bulb: Proposal 1 of 2 (last 14 days): shift *3 GPUs* from *vision-lab* to *biz-model-serving*."
        )
        assert second.text == (
            ":bulb: Proposal 2 of 2 (last 14 days): shift *2 GPUs* from *ai-frontier-research* to *biz-model-serving*. "
            "ai-frontier-research used at most 2 of 4 GPUs (1.5 on average), 31 % busy; "
            "biz-model-serving was at its quota 92 % of the time (Prometheus). "
            "Nothing changes unless a shift is requested and approved."
        )


def test_both_signals_are_named_when_both_saw_the_shortage(saturated: PrometheusServer) -> None:
    with three_teams(saturated.url, ManualClock(FIRST + timedelta(hours=9))) as slack:
        block_business_17_times(slack)
        run = proposals_of(slack).run()
        assert [(p.source.namespace, p.target.namespace) for p in run.proposals] == [(LAB, BUSINESS), (FRONTIER, BUSINESS)]
        assert (
            "biz-model-serving was blocked by quota 17 times (the bot's alerts) and at its quota 92 % of the time (Prometheus). "
            in slack.channel_messages("C0PLATFORM")[1].text
        )


def test_the_saturation_read_from_prometheus_is_the_truth_of_the_history(saturated: PrometheusServer) -> None:
    """One query for all namespaces; the truth summed in Python from the same samples, and as built."""
    metrics = PrometheusMetrics.connect(saturated.url, interval=STEP, idle_threshold=0.05)
    names = dict.fromkeys((FRONTIER, BUSINESS, BATCH, LAB), "compute-quota")
    measured = metrics.quota_saturation(FIRST, LAST, names)
    truth = HistoryMetrics(saturated_fortnight()).quota_saturation(FIRST, LAST, names)
    assert metrics.queries == 1
    assert truth[BUSINESS] == pytest.approx(22 / 24) and truth[BATCH] == pytest.approx(1 / 24)
    assert truth[FRONTIER] == 0 and truth[LAB] == 0
    assert set(measured) == set(truth)
    assert all(measured[ns] == pytest.approx(truth[ns], abs=1e-3) for ns in truth), (measured, truth)


def test_prometheus_refusing_the_saturation_query_leaves_the_alerts(
    saturated: PrometheusServer, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = QuotaQueriesRefused(saturated.url)
    try:
        with three_teams(proxy.url, ManualClock(FIRST + timedelta(hours=9))) as slack:
            block_business_17_times(slack)
            with caplog.at_level(logging.WARNING, logger="bot.services.proposals"):
                run = proposals_of(slack).run()
            assert proxy.refused == 1
            assert [(p.source.namespace, p.target.namespace) for p in run.proposals] == [(LAB, BUSINESS), (FRONTIER, BUSINESS)]
            assert (
                "biz-model-serving was blocked by quota 17 times (the bot's alerts; Prometheus was not read). "
                in slack.channel_messages("C0PLATFORM")[1].text
            )
    finally:
        proxy.stop()
    [line] = [r for r in caplog.records if r.name == "bot.services.proposals" and r.levelno >= logging.WARNING]
    assert line.exc_info is None
    assert line.getMessage() == (
        "proposals: Prometheus was not read for the quotas' saturation (Prometheus rejected a query (HTTP 422): "
        "query processing would load too many samples into memory in query execution); "
        "the bot's alerts alone tell which namespaces are short"
    )


def test_neither_signal_when_prometheus_was_not_read_and_nothing_was_blocked(saturated: PrometheusServer) -> None:
    proxy = QuotaQueriesRefused(saturated.url)
    try:
        with three_teams(proxy.url, ManualClock(NOW)) as slack:
            run = proposals_of(slack).run()
            assert run.proposals == [] and slack.channel_messages("C0PLATFORM") == []
            assert run.skipped == "no sign of a shortage: no quota-blocked alerts in the last 14 days and Prometheus was not read"
    finally:
        proxy.stop()


def late_and_lowered_fortnight() -> History:
    """Quotas whose series do not cover the fortnight as one value: the truth of their saturation is a share
    of the whole window, and only "used == hard" is at the quota.

    - vision-lab: its quota (1 GPU) was created 2 days before the end and was full from then on: at its
      quota 2 of the 14 days (14 %), not 100 % of the time its series existed;
    - vision-batch: 6 GPUs in use all along; its quota was lowered from 8 to 2 on the 5th (a strategy
      shift's gradual reclaim): over its quota from then on, which is not being held back by it;
    - business: its quota (16) never full, beside a second GPU quota of its namespace (not the policy's)
      that was full all along.
    """
    history = History(step=STEP, start=FIRST, end=LAST)
    created = LAST - timedelta(days=2)
    history.quotas = {LAB: 1, BATCH: 8, BUSINESS: 16}
    history.quota_changes = {LAB: [(FIRST, None), (created, 1)], BATCH: [(FIRST + timedelta(days=4), 2)]}
    history.extra_quotas = {BUSINESS: ("scoped-gpu-quota", 4)}
    history.pods = [
        PodRun(LAB, "notebook", 1, "gpu-node-d", A100, created, LAST, 0.3),
        PodRun(BATCH, "pipeline", 6, "gpu-node-c", H100, FIRST, LAST, 0.7),
        PodRun(BUSINESS, "serve", 4, "gpu-node-b", H100, FIRST, LAST, 0.9),
    ]
    return history


def test_the_saturation_is_a_share_of_the_whole_window_at_the_policys_quota(tmp_path: Path) -> None:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    history = late_and_lowered_fortnight()
    server = PrometheusServer(tmp_path).load(history)
    server.start()
    try:
        names = {LAB: "compute-quota", BATCH: "compute-quota", BUSINESS: "compute-quota"}
        measured = PrometheusMetrics.connect(server.url, interval=STEP, idle_threshold=0.05).quota_saturation(FIRST, LAST, names)
    finally:
        server.stop()
    truth = HistoryMetrics(history).quota_saturation(FIRST, LAST, names)
    assert truth == {LAB: pytest.approx(2 / 14), BATCH: 0, BUSINESS: 0}
    assert set(measured) == set(truth)
    assert all(measured[ns] == pytest.approx(truth[ns], abs=2e-3) for ns in truth), (measured, truth)
