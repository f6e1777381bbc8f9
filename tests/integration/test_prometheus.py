"""Digests, budgets, nudges and alerts against a real Prometheus loaded with a history of known truth.

The history (Europe/Berlin calendar) has pods that start and stop mid-day, an idle-but-allocated
namespace, a namespace whose DCGM series carry ``exported_namespace``, GPUs without the profiling
metric, a Pending pod, spare GPUs attached to no pod, the DST day (25 October 2026, 25 hours) and
the October/November month boundary. The truth is the same history summed in Python.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.adapters.prometheus import PrometheusMetrics
from bot.clock import ManualClock
from bot.domain.policy import Policy, parse_policy
from bot.errors import PermanentError, TemporaryError
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from bot.sandbox.httpserver import Incoming, LoopbackServer, Outgoing
from bot.sandbox.kube_api import quota_refusal_event
from bot.sandbox.session import Sandbox
from bot.services.spend import SpendReader
from tests.integration.conftest import buttons_of
from tests.prometheus_server import PrometheusServer, binaries_available, forward

UTC = timezone.utc
START = datetime(2026, 10, 20, tzinfo=UTC)
END = datetime(2026, 11, 4, tzinfo=UTC)
STEP = timedelta(minutes=5)

POLICY = {
    "admin_channel": "C0PLATFORM",
    "schedules": {"timezone": "Europe/Berlin"},
    "pricing": {"currency": "EUR", "default_per_gpu_hour": 1.0, "models": {A100: 2.0, H100: 4.0}},
    "metrics": {"team_label": "team", "idle_threshold_percent": 5, "idle_window": "6h", "sample_interval": "5m"},
    "teams": {
        "research": {
            "display_name": "Research",
            "channel": "C0FRONTIER",
            "namespaces": ["ns-train", "ns-idle"],
            "approvers": {"users": ["U0LEE"]},
            "members": {"users": ["U0ALICE"]},
            "budget": {"monthly": 1500},
        },
        "serving": {
            "display_name": "Serving",
            "channel": "C0BIZ",
            "namespaces": ["ns-serve", "ns-pending"],
            "approvers": {"users": ["U0MAYA"]},
            "budget": {"monthly": 20000},
        },
    },
}


def truth_history() -> History:
    at = lambda *args: datetime(*args, tzinfo=UTC)  # noqa: E731
    history = History(
        step=STEP,
        start=START,
        end=END,
        unattached_gpus=2,
        namespace_labels={"ns-train": {"team": "research"}, "ns-other": {"team": "analytics"}},
    )
    history.pods += [
        PodRun("ns-train", "train-1", 2, "node-a", A100, START, END, 0.6, wobble=0.3),
        PodRun("ns-train", "burst", 1, "node-b", H100, at(2026, 10, 25, 7, 35), at(2026, 10, 25, 15, 10), 0.5, profiling=False),
        PodRun("ns-train", "eval", 3, "node-c", H100, at(2026, 10, 31, 20), at(2026, 11, 2, 3), 0.3, wobble=0.2),
        PodRun("ns-idle", "parked", 4, "node-d", A100, START, END, 0.01),
        PodRun("ns-serve", "serve-1", 2, "node-e", H100, START, END, 0.5, wobble=0.2, exported_labels=True),
        PodRun("ns-pending", "waiting", 8, "", H100, START, END, 0.0, scheduled=False),
        PodRun("ns-other", "notebook", 1, "node-f", A100, START, END, 0.2),
    ]
    return history


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus")).load(truth_history()).start()
    yield server
    server.stop()


@pytest.fixture
def policy() -> Policy:
    return parse_policy(POLICY)


def real(prometheus: PrometheusServer, policy: Policy) -> PrometheusMetrics:
    return PrometheusMetrics.connect(prometheus.url, interval=STEP, idle_threshold=policy.metrics.idle_threshold_percent / 100)


def truth(policy: Policy) -> HistoryMetrics:
    return HistoryMetrics(truth_history(), idle_threshold=policy.metrics.idle_threshold_percent / 100)


def close(measured: float | None, expected: float | None) -> bool:
    if expected is None or measured is None:
        return measured == expected
    return abs(measured - expected) <= 0.01 * max(abs(expected), 1e-9) + 1e-6


@pytest.mark.prometheus
@pytest.mark.parametrize(
    "day", [date(2026, 10, 24), date(2026, 10, 25), date(2026, 10, 31), date(2026, 11, 1), date(2026, 11, 2)]
)
def test_figures_match_the_truth_within_one_percent(prometheus: PrometheusServer, policy: Policy, day: date) -> None:
    measured = SpendReader(policy=policy, metrics=real(prometheus, policy)).month_through(day)
    expected = SpendReader(policy=policy, metrics=truth(policy)).month_through(day)
    assert set(measured.teams) == set(expected.teams)
    for days in ([day], sorted(expected.days)):
        got = {line.namespace: line for line in measured.lines(days)}
        want = {line.namespace: line for line in expected.lines(days)}
        assert set(got) == set(want), days
        for namespace, line in want.items():
            other = got[namespace]
            for field in ("gpu_hours", "cost", "idle_hours", "idle_cost", "utilisation"):
                assert close(getattr(other, field), getattr(line, field)), (
                    namespace,
                    days[-1],
                    field,
                    getattr(other, field),
                    getattr(line, field),
                )


@pytest.mark.prometheus
def test_the_dst_day_has_25_hours_and_pending_pods_and_spare_gpus_cost_nothing(
    prometheus: PrometheusServer, policy: Policy
) -> None:
    spend = SpendReader(policy=policy, metrics=real(prometheus, policy)).month_through(date(2026, 10, 25))
    day = {line.namespace: line for line in spend.lines([date(2026, 10, 25)])}
    assert day["ns-idle"].gpu_hours == pytest.approx(4 * 25)  # 4 GPUs all day long, and the day had 25 hours
    assert day["ns-idle"].idle_hours == pytest.approx(4 * 25)
    assert day["ns-idle"].cost == pytest.approx(4 * 25 * 2.0)
    assert day["ns-train"].by_model[H100][0] == pytest.approx(7 + 35 / 60, rel=0.02)  # the burst pod: 07:35-15:10 on one H100
    assert "ns-pending" not in day or day["ns-pending"].gpu_hours == 0
    assert "gpu-operator" not in spend.teams
    assert spend.teams["ns-other"] == "analytics (not managed)"


@pytest.mark.prometheus
def test_month_to_date_starts_at_the_month_boundary(prometheus: PrometheusServer, policy: Policy) -> None:
    spend = SpendReader(policy=policy, metrics=real(prometheus, policy)).month_through(date(2026, 11, 2))
    assert sorted(spend.days) == [date(2026, 11, 1), date(2026, 11, 2)]
    train = spend.line("ns-train", sorted(spend.days))
    # train-1: 2 GPUs x 48 h; eval: 3 GPUs from Nov 1 00:00 Berlin (Oct 31 23:00 UTC) to Nov 2 03:00 UTC = 28 h.
    assert train is not None and train.gpu_hours == pytest.approx(2 * 48 + 3 * 28)


@pytest.mark.prometheus
def test_the_number_of_queries_does_not_depend_on_the_number_of_namespaces(prometheus: PrometheusServer, policy: Policy) -> None:
    october = real(prometheus, policy)
    SpendReader(policy=policy, metrics=october).month_through(date(2026, 10, 31))
    # Runs of equal-length days of at most a week (1-7, 8-14, 15-21, 22-24, the 25-hour 25th, 26-31),
    # the sample spacing, the allocated GPUs, the DCGM samples and utilisation, and the idle subquery apart
    # (no recording rule here) each, plus the team labels; and for each run with samples (15-21, 22-24, the
    # 25th, 26-31: the history starts on the 20th) one read of the raw samples per exporter, for their spacing.
    assert october.queries == 25 + 4 * 2
    november = real(prometheus, policy)
    SpendReader(policy=policy, metrics=november).month_through(date(2026, 11, 2))
    assert november.queries == 5 + 2


@pytest.mark.prometheus
def test_check_config_sees_which_exporters_are_scraped(prometheus: PrometheusServer, policy: Policy) -> None:
    present = real(prometheus, policy).series_present(
        ["kube_pod_status_phase", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"], at=datetime(2026, 11, 3, tzinfo=UTC)
    )
    assert present == {"kube_pod_status_phase": True, "DCGM_FI_DEV_GPU_UTIL": True, "DCGM_FI_DEV_FB_USED": False}


# --- through the Slack stand-in ------------------------------------------------------------------


class FlakyProxy:
    """Prometheus behind a proxy that can be switched to answering 503, and can demand a bearer token."""

    def __init__(self, target: str, *, token: str | None = None) -> None:
        self.target = target
        self.token = token
        self.up = True
        self._server = LoopbackServer(self._forward).start()
        self.url = self._server.url

    def _forward(self, incoming: Incoming) -> Outgoing:
        if self.token and incoming.headers.get("authorization") != f"Bearer {self.token}":
            return Outgoing(401, b"Unauthorized")
        if not self.up:
            return Outgoing(503, b"upstream connect error or disconnect/reset before headers")
        return forward(self.target, incoming)

    def stop(self) -> None:
        self._server.stop()


@pytest.fixture
def proxy(prometheus: PrometheusServer) -> Iterator[FlakyProxy]:
    flaky = FlakyProxy(prometheus.url)
    yield flaky
    flaky.stop()


@pytest.mark.prometheus
def test_a_prometheus_behind_an_authenticating_proxy(prometheus: PrometheusServer, policy: Policy) -> None:
    guarded = FlakyProxy(prometheus.url, token="s3cret")
    try:
        anonymous = PrometheusMetrics.connect(guarded.url, interval=STEP, idle_threshold=0.05)
        with pytest.raises(PermanentError, match="refused the bot's credentials"):
            anonymous.allocated_at(datetime(2026, 11, 3, tzinfo=UTC))
        with_token = PrometheusMetrics.connect(guarded.url, interval=STEP, idle_threshold=0.05, bearer_token="s3cret")
        assert with_token.allocated_at(datetime(2026, 11, 3, tzinfo=UTC))["ns-idle"] == 4
    finally:
        guarded.stop()


def make_sandbox(policy: Policy, proxy: FlakyProxy, clock: ManualClock, database_url: str | None = None) -> Sandbox:
    metrics = PrometheusMetrics.connect(proxy.url, interval=STEP, idle_threshold=0.05, timeout=10)
    box = Sandbox(policy=policy, clock=clock, metrics=metrics, seed=False, database_url=database_url).start()
    for namespace in ("ns-train", "ns-idle", "ns-serve", "ns-pending"):
        box.kube.add_namespace(namespace)
        box.kube.add_quota(namespace, "compute-quota", {"requests.nvidia.com/gpu": "4"}, used_gpus=4)
    return box


def messages(box: Sandbox, channel: str) -> list:  # type: ignore[type-arg]
    return [r for r in box.slack.records if r.kind == "message" and r.channel == channel and not r.thread_ts]


@pytest.mark.prometheus
def test_digest_posts_text_and_chart_through_slack(policy: Policy, proxy: FlakyProxy) -> None:
    box = make_sandbox(policy, proxy, ManualClock(datetime(2026, 11, 3, 8, tzinfo=UTC)))
    try:
        done = box.services.digest.run()
        assert done == [(date(2026, 11, 2), ["research", "serving", "*"])]
        research = json.dumps(messages(box, "C0FRONTIER")[-1].blocks)
        assert "GPU cost digest \\u00b7 Research \\u00b7 Nov 2, 2026" in research
        assert "ns-idle" in research and "NVIDIA A100-SXM4-80GB" in research
        files = [r for r in box.slack.records if r.kind == "file"]
        assert {f.channel for f in files} == {"C0FRONTIER", "C0BIZ", "C0PLATFORM"}
        assert all(f.content.startswith(b"\x89PNG") for f in files)
        org = json.dumps(messages(box, "C0PLATFORM")[-1].blocks)
        assert "analytics (not managed)" in org
        assert box.services.digest.run() == []  # the same day is never posted twice
    finally:
        box.stop()


@pytest.mark.prometheus
def test_metrics_down_is_told_once_then_the_digest_catches_up(policy: Policy, proxy: FlakyProxy) -> None:
    clock = ManualClock(datetime(2026, 11, 1, 8, tzinfo=UTC))
    box = make_sandbox(policy, proxy, clock)
    try:
        assert [d for d, _ in box.services.digest.run()] == [date(2026, 10, 31)]
        proxy.up = False
        for _ in range(2):
            clock.advance(timedelta(days=1))
            with pytest.raises(TemporaryError):
                box.services.digest.run()
        notices = [r.text for r in messages(box, "C0PLATFORM") if "unavailable" in r.text]
        assert len(notices) == 1 and "HTTP 503" in notices[0]
        box.send(box.side.slash_command(user_id="U0ALICE", text="status ns-train"))  # commands still work
        assert "*ns-train*" in [r.text for r in box.slack.records if r.kind == "response"][-1]
        proxy.up = True
        clock.advance(timedelta(days=1))
        assert [d for d, _ in box.services.digest.run()] == [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)]
        assert any("metrics are back" in r.text for r in messages(box, "C0PLATFORM"))
    finally:
        box.stop()


@pytest.mark.prometheus
def test_budget_warnings_once_per_month_across_restarts(policy: Policy, proxy: FlakyProxy, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    clock = ManualClock(datetime(2026, 11, 3, 11, tzinfo=UTC))
    box = make_sandbox(policy, proxy, clock, database_url=url)
    try:
        sent = box.services.budget.check()
        assert ("research", "50") in sent
        warning = messages(box, "C0FRONTIER")[-1].text
        assert "<@U0LEE>" in warning and "Research" in warning and "monthly GPU budget" in warning
        assert box.services.budget.check() == []
    finally:
        box.stop()
    again = make_sandbox(policy, proxy, clock, database_url=url)
    try:
        assert again.services.budget.check() == []
        assert [m for m in messages(again, "C0FRONTIER") if "budget" in m.text] == []
    finally:
        again.stop()


@pytest.mark.prometheus
def test_idle_nudge_and_snooze_through_slack(policy: Policy, proxy: FlakyProxy) -> None:
    box = make_sandbox(policy, proxy, ManualClock(datetime(2026, 11, 3, 12, tzinfo=UTC)))
    try:
        assert box.services.idle.check() == ["ns-idle"]
        nudge = messages(box, "C0FRONTIER")[-1]
        assert "*ns-idle* holds 4 GPUs" in nudge.text
        snooze = buttons_of(nudge.blocks)["Snooze 24 h"]
        box.send(
            box.side.block_action(
                user_id="U0ALICE",
                action_id=snooze["action_id"],
                value=snooze["value"],
                channel_id=nudge.channel,
                message_ts=nudge.ts,
            )
        )
        assert "snoozed until" in [r.text for r in box.slack.records if r.kind == "response"][-1]
        box.clock.advance(timedelta(hours=1))
        assert box.services.idle.check() == []
    finally:
        box.stop()


@pytest.mark.prometheus
def test_blocked_workload_alert_opens_a_prefilled_request(policy: Policy, proxy: FlakyProxy) -> None:
    box = make_sandbox(policy, proxy, ManualClock(datetime(2026, 11, 3, 12, tzinfo=UTC)))
    try:
        box.kube.add_event(quota_refusal_event("ns-train", "Job", "finetune", requested=2, used=4, limited=4, count=5))
        box.kube.add_event(quota_refusal_event("kube-system", "Job", "not-ours", requested=1, used=1, limited=1))
        assert box.services.blocked.check() == ["ns-train/Job/finetune"]
        assert box.services.blocked.check() == []
        alert = messages(box, "C0FRONTIER")[-1]
        assert "*Job finetune* in *ns-train* cannot start pods" in alert.text
        more = buttons_of(alert.blocks)["Request more"]
        box.send(
            box.side.block_action(
                user_id="U0ALICE", action_id=more["action_id"], value=more["value"], channel_id=alert.channel, message_ts=alert.ts
            )
        )
        form = [r for r in box.slack.records if r.kind == "view_open"][-1].view
        inputs = {b["block_id"]: b["element"] for b in form["blocks"] if b["type"] == "input"}
        assert inputs["namespace"]["initial_option"]["value"] == "ns-train" and inputs["gpus"]["initial_value"] == "+2"
    finally:
        box.stop()
