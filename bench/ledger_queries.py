"""Each Prometheus query of the ledger's day, timed apart, on the data ``bench/ledger_scale.py`` kept.

Recording 31 October (what the 00:20 ledger job, or a digest that finds the day unrecorded, does) and
the budget check's read of 31 October until 12:00, query by query, each three times (median printed),
with the wall-clock load average beside them (the machine is shared). Last, the whole measurement of
the sample spacing as the adapter makes it: the spacing query, then one read of the raw samples of
the series it names per exporter (the queries and the samples those reads return are printed).

    BENCH_KEEP=/var/tmp/ledger-bench .venv/bin/python bench/ledger_queries.py 1000-from-29 3000-from-29

Each argument names a directory under ``BENCH_KEEP`` written by ``ledger_scale.py --recent 3`` (with
``-rule`` at the end when it was backfilled with ``--rule``). Nothing is deleted.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests  # noqa: E402
from prometheus_api_client import PrometheusConnect  # noqa: E402

from bench.digest_scale import settle  # noqa: E402
from bot.adapters import prometheus as p  # noqa: E402
from bot.domain.costs import Window  # noqa: E402
from bot.domain.resources import GPU  # noqa: E402
from tests.prometheus_server import PrometheusServer  # noqa: E402

RUNS = 3
DAY = 86400
THRESHOLD = 0.05
STEP = 300
END_OF_DAY = datetime(2026, 11, 1, tzinfo=timezone.utc)
NOON = datetime(2026, 10, 31, 12, tzinfo=timezone.utc)
# Whole GPUs and two MIG profiles: the kube-state-metrics selector becomes an alternation of their names.
GOVERNED = (GPU, "nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb")


def queries() -> list[tuple[str, str, int, datetime]]:
    """(name, PromQL, window seconds, window end) of the day's record and of the budget check's read."""
    half = DAY // 2
    return [
        ("record: days_with_data", f"count(count_over_time({p.RUNNING}[{DAY}s]))", DAY, END_OF_DAY),
        ("record: spacing", p.spacing_query(DAY, THRESHOLD), DAY, END_OF_DAY),
        ("record: allocated", p.allocated_samples_query(DAY), DAY, END_OF_DAY),
        ("record: allocated, 3 resources", p.allocated_samples_query(DAY, GOVERNED), DAY, END_OF_DAY),
        ("record: dcgm (3 measures)", " or ".join(p.dcgm_queries(DAY, STEP, THRESHOLD)), DAY, END_OF_DAY),
        ("record: dcgm (3, idle by rule)", " or ".join(p.dcgm_queries(DAY, STEP, THRESHOLD, with_rule=True)), DAY, END_OF_DAY),
        ("budget: spacing", p.spacing_query(half, THRESHOLD, rule=False), half, NOON),
        ("budget: allocated", p.allocated_samples_query(half), half, NOON),
        ("budget: dcgm samples", " or ".join(p.dcgm_queries(half, STEP, THRESHOLD, idle=False)), half, NOON),
    ] + [(f"part: {name}", query, DAY, END_OF_DAY) for name, query in parts()]


def parts() -> list[tuple[str, str]]:
    """The DCGM queries' measures alone, to find the slow one; "idle subquery (before)" is the idle count as it
    was (the metric chosen per GPU at every step of the subquery), "idle per GPU metric" as it is."""
    per_sample = f"(({p.PROF} * 1) or ({p.DEV} / 100))"
    return [
        ("dcgm samples", f"sum by (namespace, modelName) ({p.pod_namespace(f'count_over_time({p.DEV}[{DAY}s])')})"),
        (
            "idle subquery (before)",
            f"sum by (namespace, modelName) ({p.pod_namespace(f'count_over_time(({per_sample} < {THRESHOLD})[{DAY}s:{STEP}s])')})",
        ),
        (
            "idle per GPU metric",
            f"sum by (namespace, modelName) ({p.pod_namespace(p.idle_samples_query(DAY, STEP, THRESHOLD))})",
        ),
        ("util sum", f"sum by (namespace, modelName) ({p.pod_namespace(p.utilisation('sum_over_time', DAY))})"),
        (
            "idle by rule",
            f"sum by (namespace, modelName) ({p.pod_namespace(f'sum_over_time({p.idle_rule(THRESHOLD)}[{DAY}s])')})",
        ),
    ]


def timed(url: str, query: str, at: datetime) -> tuple[float, int]:
    started = time.perf_counter()
    answer = requests.post(f"{url}/api/v1/query", data={"query": query, "time": str(int(at.timestamp()) - 1)}, timeout=600)
    elapsed = time.perf_counter() - started
    answer.raise_for_status()
    return elapsed, len(answer.json()["data"]["result"])


class CountingSession(requests.Session):
    """Counts the raw samples the answers hold (a matrix's values)."""

    samples = 0

    def request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        answer = super().request(*args, **kwargs)
        result = answer.json().get("data", {}).get("result", [])
        CountingSession.samples += sum(len(series.get("values", [])) for series in result if isinstance(series, dict))
        return answer


def spacing_reads(url: str) -> None:
    """``PrometheusMetrics.sample_spacing`` of the day recorded and of the budget check's partial day, timed."""
    day = date(2026, 10, 31)
    for label, window in (
        ("record: spacing + raw reads", Window(day, END_OF_DAY - timedelta(days=1), END_OF_DAY)),
        ("budget: spacing + raw reads", Window(day, END_OF_DAY - timedelta(days=1), NOON)),
    ):
        client = PrometheusConnect(url=url, session=CountingSession(), method="POST", timeout=600)
        metrics = p.PrometheusMetrics(client, interval=timedelta(seconds=STEP), idle_threshold=THRESHOLD, timeout=600)
        times = []
        for _ in range(RUNS):
            CountingSession.samples = 0
            started = time.perf_counter()
            found = metrics.sample_spacing([window])[day]
            times.append(time.perf_counter() - started)
        queries = metrics.queries // RUNS
        print(
            f"  {label:<34} {statistics.median(times):>7.2f} {queries:>3} queries {CountingSession.samples:>7} raw samples"
            f" {found} {os.getloadavg()[0]:>5.1f}",
            flush=True,
        )


def main(names: list[str]) -> None:
    keep = Path(os.environ.get("BENCH_KEEP", "/var/tmp/ledger-bench"))
    for name in names:
        server = PrometheusServer(keep / name)
        server.start(timeout=600)
        try:
            settle(server)
            print(f"{name}: median of {RUNS} (s), series returned, load 1 min")
            for label, query, _, at in queries():
                times = []
                for _ in range(RUNS):
                    elapsed, series = timed(server.url, query, at)
                    times.append(elapsed)
                print(f"  {label:<34} {statistics.median(times):>7.2f} {series:>7} {os.getloadavg()[0]:>5.1f}", flush=True)
            spacing_reads(server.url)
        finally:
            server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
