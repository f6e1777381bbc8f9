"""Prices per capacity type and node pool against a real Prometheus (Debian's 2.42) holding kube_node_labels
(issue 25): the ledger's cost per day and per month within 0.5 % of the truth per capacity type and pool.

Three days (1-3 November 2026, UTC): kube-state-metrics every 5 minutes, DCGM every minute, and kube_node_labels
as kube-state-metrics exports them with ``--metric-labels-allowlist=nodes=[...]`` (names sanitised:
``label_karpenter_sh_capacity_type``, ``label_eks_amazonaws_com_capacity_type``):

- ``ns-mixed`` runs half on spot and half on on-demand: two H100s on a Karpenter spot node, two on an EKS
  on-demand node, all day; and an A100 on a GKE Spot node each morning (a model without a spot price of its
  own: ``spot.default_per_gpu_hour``);
- ``ns-onprem`` runs an A100 on a node of the on-premises pool (``example.com/gpu-pool: on-prem``, its own
  price), and one on a node whose pool the policy does not price (``gpu-cloud``: by its capacity type);
- ``ns-odd`` runs an A100 on a node whose ``node.kubernetes.io/lifecycle`` is a value no provider writes, and
  one on a node kube-state-metrics exports no labels of: both on-demand, never dropped;
- preemptible pods (PriorityClass ``batch-low``) of ``ns-mixed`` run on on-demand nodes for the proposals.

5 November repeats the day without any kube_node_labels series (kube-state-metrics' nodes metrics off): the
digest's facts say the split is unavailable and everything is priced on-demand. The truth is the same history
summed in Python (``HistoryMetrics``), sample by sample, at the same prices.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.prometheus import PrometheusMetrics
from bot.check_config import capacity_problems
from bot.clock import ManualClock
from bot.domain.capacity import ON_DEMAND, ON_DEMAND_PLACEMENT, SPOT, Placement, SplitState
from bot.domain.costs import CostLine, day_window
from bot.domain.policy import Policy, parse_policy
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from bot.services.ledger import Ledger, export_rows
from bot.services.spend import Spend, SpendReader
from tests.prometheus_server import PrometheusServer, binaries_available

UTC = timezone.utc
START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 4, tzinfo=UTC)
BARE_START, BARE_END = datetime(2026, 11, 5, tzinfo=UTC), datetime(2026, 11, 6, tzinfo=UTC)
NOW = datetime(2026, 11, 6, 9, tzinfo=UTC)
DAYS = [date(2026, 11, d) for d in (1, 2, 3)]
BARE_DAY = date(2026, 11, 5)
POOL_LABEL = "example.com/gpu-pool"

NODE_LABELS = {
    "spot-a": {"karpenter.sh/capacity-type": "spot", "node.kubernetes.io/instance-type": "p5.48xlarge"},
    "od-b": {"eks.amazonaws.com/capacityType": "ON_DEMAND"},
    "gke-c": {"cloud.google.com/gke-spot": "true"},
    "onprem-d": {POOL_LABEL: "on-prem"},
    "cloud-e": {POOL_LABEL: "gpu-cloud", "kubernetes.azure.com/scalesetpriority": "spot"},
    "odd-f": {"node.kubernetes.io/lifecycle": "weird"},
    # "bare-g": no kube_node_labels series at all
}

POLICY = {
    "schedules": {"timezone": "UTC"},
    "pricing": {
        "currency": "USD",
        "default_per_gpu_hour": 1.0,
        "models": {A100: 2.0, H100: 4.0},
        "spot": {"models": {H100: 1.5}, "default_per_gpu_hour": 0.8, "preemptible_priority_classes": ["batch-low"]},
        "pool_label": POOL_LABEL,
        "pools": {"on-prem": {"default_per_gpu_hour": 0.5}},
    },
    "metrics": {"idle_threshold_percent": 5, "sample_interval": "5m"},
    "teams": {
        "research": {
            "channel": "C0RESEARCH",
            "namespaces": ["ns-mixed", "ns-onprem", "ns-odd"],
            "approvers": {"users": ["U0LEE"]},
            "budget": {"monthly": 5000},
        }
    },
}


def pods(start: datetime, end: datetime) -> list[PodRun]:
    found = [
        PodRun("ns-mixed", "train-spot", 2, "spot-a", H100, start, end, 0.7, wobble=0.2),
        PodRun("ns-mixed", "train-od", 2, "od-b", H100, start, end, 0.6, wobble=0.2, exported_labels=True),
        PodRun("ns-onprem", "sim", 1, "onprem-d", A100, start, end, 0.5),
        PodRun("ns-onprem", "sim-cloud", 1, "cloud-e", A100, start, end, 0.5, profiling=False),
        PodRun("ns-odd", "odd", 1, "odd-f", A100, start, end, 0.02),  # idle: idle hours per placement
        PodRun("ns-odd", "bare", 1, "bare-g", A100, start, end, 0.4),
    ]
    day = start
    while day < end:  # each morning: an A100 on GKE Spot, and preemptible batch work on on-demand nodes
        found.append(PodRun("ns-mixed", f"morning-{day:%d}", 1, "gke-c", A100, day, day + timedelta(hours=6), 0.9))
        found.append(
            PodRun(
                "ns-mixed",
                f"batch-{day:%d}",
                1,
                "od-b",
                H100,
                day + timedelta(hours=6),
                day + timedelta(hours=18),
                0.8,
                priority_class="batch-low",
            )
        )
        found.append(
            PodRun(
                "ns-mixed",
                f"batch-spot-{day:%d}",
                1,
                "spot-a",
                H100,
                day + timedelta(hours=18),
                day + timedelta(hours=20),
                0.8,
                priority_class="batch-low",
            )
        )
        day += timedelta(days=1)
    return found


def labelled() -> History:
    history = History(step=timedelta(minutes=5), dcgm_step=timedelta(minutes=1), start=START, end=END, node_labels=NODE_LABELS)
    history.pods += pods(START, END)
    return history


def unlabelled() -> History:
    """The same use on 5 November, without any kube_node_labels series."""
    history = History(step=timedelta(minutes=5), dcgm_step=timedelta(minutes=1), start=BARE_START, end=BARE_END)
    history.pods += pods(BARE_START, BARE_END)
    return history


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"))
    server.add_blocks(labelled(), name="labelled")
    server.add_blocks(unlabelled(), name="unlabelled")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def policy() -> Policy:
    return parse_policy(POLICY)


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('ledger')}/bot.db"
    upgrade(url)
    return url


def connect(url: str, policy: Policy) -> PrometheusMetrics:
    pricing = policy.pricing
    return PrometheusMetrics.connect(
        url, interval=timedelta(minutes=5), idle_threshold=0.05, pool_label=pricing.pool_label, pools=tuple(pricing.pools)
    )


def ledger_of(policy: Policy, metrics: PrometheusMetrics | None, url: str) -> Ledger:
    return Ledger(policy=policy, metrics=metrics, database=Database.from_url(url), clock=ManualClock(NOW))


def truth(policy: Policy, history: History, days: list[date]) -> Spend:
    source = HistoryMetrics(history, idle_threshold=0.05, pool_label=POOL_LABEL, pools=tuple(policy.pricing.pools))
    windows = [day_window(day, policy.schedules.zone) for day in days]
    return SpendReader(policy=policy, metrics=source).read(windows, at=windows[-1].end)


def within(measured: float, expected: float, tolerance: float = 0.005) -> bool:
    return abs(measured - expected) <= tolerance * abs(expected) + 1e-6


def per_placement(line: CostLine | None) -> dict[Placement, tuple[float, float, float]]:
    """Per placement: whole-GPU hours, idle hours and the cost of every resource there."""
    if line is None:
        return {}
    return {p: (f.gpu.hours, f.gpu.idle_hours, f.cost) for p, f in line.placements().items()}


def assert_placements_match(got: CostLine | None, want: CostLine | None, what: str) -> None:
    measured, expected = per_placement(got), per_placement(want)
    assert set(measured) == set(expected), (what, measured, expected)
    for placement, figures in expected.items():
        for name, a, b in zip(("hours", "idle hours", "cost"), measured[placement], figures, strict=True):
            assert within(a, b), (what, placement, name, a, b)


@pytest.mark.prometheus
def test_the_ledger_prices_each_capacity_type_and_pool_within_half_a_percent_per_day_and_month(
    prometheus: PrometheusServer, policy: Policy, database_url: str
) -> None:
    metrics = connect(prometheus.url, policy)
    done = ledger_of(policy, metrics, database_url).catch_up(date(2026, 11, 5))
    assert set(DAYS) | {BARE_DAY} <= set(done.recorded)
    assert metrics.splits[date(2026, 11, 2)] == SplitState.SPLIT
    assert metrics.splits[BARE_DAY] == SplitState.NO_NODE_LABELS
    spend = SpendReader(policy=policy, metrics=metrics, ledger=ledger_of(policy, metrics, database_url)).month_through(
        date(2026, 11, 3)
    )
    expected = truth(policy, labelled(), DAYS)
    for namespace in ("ns-mixed", "ns-onprem", "ns-odd"):
        for day in DAYS:
            assert_placements_match(spend.line(namespace, [day]), expected.line(namespace, [day]), f"{namespace} {day}")
        assert_placements_match(spend.line(namespace, DAYS), expected.line(namespace, DAYS), f"{namespace} month")
    mixed = spend.line("ns-mixed", DAYS)
    assert mixed is not None
    figures = per_placement(mixed)
    # Half on spot, half on-demand (and the mornings' A100 on GKE Spot, the batch work on either).
    assert set(figures) == {ON_DEMAND_PLACEMENT, Placement(SPOT)}
    assert figures[Placement(SPOT)][0] == pytest.approx(3 * (48 + 6 + 2), rel=0.005)
    assert figures[Placement(SPOT)][2] == pytest.approx(3 * ((48 + 2) * 1.5 + 6 * 0.8), rel=0.005)
    assert figures[ON_DEMAND_PLACEMENT][2] == pytest.approx(3 * (48 + 12) * 4.0, rel=0.005)
    onprem = per_placement(spend.line("ns-onprem", DAYS))
    assert onprem[Placement(ON_DEMAND, "on-prem")][2] == pytest.approx(3 * 24 * 0.5, rel=0.005)
    assert onprem[Placement(SPOT)][2] == pytest.approx(3 * 24 * 0.8, rel=0.005)  # gpu-cloud: not priced, spot by AKS
    odd = per_placement(spend.line("ns-odd", DAYS))
    assert list(odd) == [ON_DEMAND_PLACEMENT] and odd[ON_DEMAND_PLACEMENT][0] == pytest.approx(3 * 48, rel=0.005)
    # The export keeps its columns and adds where each row ran.
    rows = export_rows(ledger_of(policy, None, database_url), date(2026, 11, 1), currency="USD")
    assert {(r["namespace"], r["capacity_type"], r["pool"]) for r in rows if r["day"] == "2026-11-02"} == {
        ("ns-mixed", "on-demand", ""),
        ("ns-mixed", "spot", ""),
        ("ns-onprem", "on-demand", "on-prem"),
        ("ns-onprem", "spot", ""),
        ("ns-odd", "on-demand", ""),
    }
    assert sum(float(r["cost"]) for r in rows if r["day"] in {"2026-11-01", "2026-11-02", "2026-11-03"}) == pytest.approx(
        sum(line.cost for line in spend.lines(DAYS)), rel=1e-9
    )


@pytest.mark.prometheus
def test_without_kube_node_labels_everything_is_on_demand_and_the_split_is_said_unavailable(
    prometheus: PrometheusServer, policy: Policy, database_url: str
) -> None:
    metrics = connect(prometheus.url, policy)
    ledger = ledger_of(policy, metrics, database_url)
    ledger.catch_up(date(2026, 11, 5))
    spend = SpendReader(policy=policy, metrics=metrics, ledger=ledger).month_through(date(2026, 11, 5))
    expected = truth(policy, unlabelled(), [BARE_DAY])
    for namespace in ("ns-mixed", "ns-onprem", "ns-odd"):
        got, want = spend.line(namespace, [BARE_DAY]), expected.line(namespace, [BARE_DAY])
        assert list(per_placement(got)) == [ON_DEMAND_PLACEMENT]
        assert_placements_match(got, want, namespace)
    (fact,) = ledger.unsplit(date(2026, 11, 1), date(2026, 11, 5))
    assert (fact.state, fact.days, fact.cluster) == (SplitState.NO_NODE_LABELS, (BARE_DAY,), "")
    assert fact.flag.startswith("--metric-labels-allowlist=nodes=[karpenter.sh/capacity-type,") and POOL_LABEL in fact.flag


@pytest.mark.prometheus
def test_check_config_names_an_unknown_capacity_type_and_an_unpriced_pool_once(
    prometheus: PrometheusServer, policy: Policy
) -> None:
    lines = capacity_problems(connect(prometheus.url, policy), policy, datetime(2026, 11, 2, 12, tzinfo=UTC))
    assert lines == [
        "node label node.kubernetes.io/lifecycle=weird is not a capacity type the bot knows: those nodes' GPU-hours are"
        " priced on-demand",
        f"node label {POOL_LABEL}=gpu-cloud is not in pricing.pools: those nodes' GPU-hours are priced by their capacity type",
    ]
    bare = capacity_problems(connect(prometheus.url, policy), policy, datetime(2026, 11, 5, 12, tzinfo=UTC))
    assert len(bare) == 1 and bare[0].startswith("Prometheus has no kube_node_labels series")


@pytest.mark.prometheus
def test_preemptible_work_is_read_per_placement_as_the_truth_has_it(prometheus: PrometheusServer, policy: Policy) -> None:
    start, end = START, END
    measured = connect(prometheus.url, policy).preemptible_use(start, end, ["batch-low"])
    expected = HistoryMetrics(labelled(), pool_label=POOL_LABEL, pools=("on-prem",)).preemptible_use(start, end, ["batch-low"])
    assert set(measured) == set(expected) == {"ns-mixed"}
    assert set(measured["ns-mixed"]) == {ON_DEMAND_PLACEMENT, Placement(SPOT)}
    for placement, share in expected["ns-mixed"].items():
        assert within(measured["ns-mixed"][placement], share), (placement, measured["ns-mixed"][placement], share)
