"""How the digest scales with the cluster: 100, 1,000 and 3,000 namespaces, 31 days at a 5-minute step.

For each size: write the history (kube-state-metrics + DCGM series) as OpenMetrics in 2-day chunks,
backfill it with promtool, start a real Prometheus and let it finish compacting the blocks, then
time the first digest (the cost ledger records the month from Prometheus), then three more from the
ledger (every team's digest and the organisation summary:
queries, pricing, Block Kit text; charts are timed apart because their number depends on the
teams, not the namespaces) and trace its peak Python memory. Prints the median.

    .venv/bin/python bench/digest_scale.py            # 100 1000 3000
    .venv/bin/python bench/digest_scale.py 100 300    # other sizes
    BENCH_KEEP=/var/tmp/bench .venv/bin/python bench/digest_scale.py   # keep (and reuse) the backfilled data

Needs Debian's prometheus package (./scripts/test installs it). Writes a few GB to a temp dir for
the largest size and removes it afterwards.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.adapters.db.database import Database  # noqa: E402
from bot.adapters.db.models import Base  # noqa: E402
from bot.adapters.prometheus import PrometheusMetrics  # noqa: E402
from bot.adapters.slack.blocks import report_blocks  # noqa: E402
from bot.adapters.slack.reports import org_report, team_report  # noqa: E402
from bot.bootstrap import build_digest  # noqa: E402
from bot.clock import ManualClock  # noqa: E402
from bot.domain.policy import parse_policy  # noqa: E402
from bot.sandbox.history import A100, H100, History, PodRun  # noqa: E402
from tests.prometheus_server import PrometheusServer  # noqa: E402

UTC = timezone.utc
MONTH = datetime(2026, 10, 1, tzinfo=UTC)
DAYS = 31
STEP = timedelta(minutes=5)
TEAMS = 20
CHUNK = timedelta(days=2)
RUNS = 3  # the digest is timed three times; the median is printed


def history(namespaces: int, start: datetime, end: datetime) -> History:
    """Each namespace runs one pod with 1 or 2 GPUs all month; every tenth is idle; half are on H100s."""
    pods = [
        PodRun(
            f"ns-{i:05d}",
            "p",
            1 + i % 2,
            f"node-{i % 400}",
            H100 if i % 2 else A100,
            MONTH,
            MONTH + timedelta(days=DAYS),
            0.01 if i % 10 == 0 else 0.6,
            profiling=i % 3 != 0,
            exported_labels=i % 5 == 0,
        )
        for i in range(namespaces)
    ]
    return History(step=STEP, start=start, end=end, pods=pods)


def backfill(
    server: PrometheusServer, namespaces: int, *, first: datetime = MONTH, idle_rule: float | None = None
) -> tuple[int, float]:
    """Write and import the month (from ``first``) in 2-day chunks, two at a time (promtool is the slow
    part), with the idle recording rule's series when ``idle_rule`` is its threshold; returns (samples, seconds)."""
    started = time.perf_counter()
    server.data.mkdir(parents=True, exist_ok=True)
    chunks = []
    moment = first
    while moment < MONTH + timedelta(days=DAYS):
        chunks.append((moment, min(moment + CHUNK, MONTH + timedelta(days=DAYS))))
        moment += CHUNK

    def import_chunk(index: int) -> int:
        start, end = chunks[index]
        return server.add_blocks(history(namespaces, start, end), name=f"chunk-{index}", idle_rule=idle_rule)

    with ThreadPoolExecutor(max_workers=2) as pool:
        samples = sum(pool.map(import_chunk, range(len(chunks))))
    return samples, time.perf_counter() - started


def policy(namespaces: int):  # type: ignore[no-untyped-def]
    names = [f"ns-{i:05d}" for i in range(namespaces)]
    teams = {
        f"team-{t:02d}": {
            "channel": "C0BENCH",
            "namespaces": names[t::TEAMS],
            "approvers": {"users": ["U0BENCH"]},
            "budget": {"monthly": 1000.0 * namespaces / TEAMS},
        }
        for t in range(TEAMS)
    }
    return parse_policy({"admin_channel": "C0ADMIN", "pricing": {"models": {A100: 2.0, H100: 4.0}}, "teams": teams})


def measure(server: PrometheusServer, namespaces: int) -> dict[str, float]:
    """The first digest (the ledger records the month from Prometheus), then the median of RUNS more (from the ledger)."""
    the_policy = policy(namespaces)
    metrics = PrometheusMetrics.connect(server.url, interval=STEP, idle_threshold=0.05, timeout=600)
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    clock = ManualClock(MONTH + timedelta(days=DAYS, hours=8))
    service = build_digest(policy=the_policy, metrics=metrics, database=database, clock=clock)
    day = date(2026, 10, 31)
    started = time.perf_counter()
    service.build(day)
    first, first_queries = time.perf_counter() - started, metrics.queries
    builds, renders = [], []
    for _ in range(RUNS):
        queries_before = metrics.queries
        tracemalloc.start()
        started = time.perf_counter()
        digest = service.build(day)
        built = time.perf_counter()
        blocks = [report_blocks(team_report(t, with_chart=False)) for t in digest.teams]
        blocks.append(report_blocks(org_report(digest, with_chart=False)))
        finished = time.perf_counter()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        builds.append(built - started)
        renders.append(finished - built)
        queries = metrics.queries - queries_before
        assert all(len(b) <= 50 for b in blocks)
    chart_started = time.perf_counter()
    team_report(digest.teams[0])
    chart = time.perf_counter() - chart_started
    return {
        "first_queries": first_queries,
        "first": first,
        "queries": queries,
        "build": statistics.median(builds),
        "render": statistics.median(renders),
        "peak_mb": peak / 2**20,
        "chart": chart,
    }


def settle(server: PrometheusServer, *, quiet: float = 20.0, limit: float = 1800.0) -> int:
    """Wait until Prometheus has finished compacting the backfilled 2-hour blocks; returns the blocks left."""
    import requests

    deadline = time.monotonic() + limit
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        text = requests.get(f"{server.url}/metrics", timeout=10).text
        blocks = int(
            float(next(line.split()[1] for line in text.splitlines() if line.startswith("prometheus_tsdb_blocks_loaded ")))
        )
        if blocks != last:
            last, since = blocks, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return blocks
        time.sleep(2)
    return last


@contextmanager
def backfilled_prometheus(
    size: int, *, prefix: str, first: datetime = MONTH, idle_rule: float | None = None
) -> Iterator[tuple[PrometheusServer, int, float]]:
    """A started, settled Prometheus holding the month (from ``first``; with the idle recording rule's
    series when ``idle_rule`` is given) for ``size`` namespaces, with the samples written and the
    backfill's seconds (0 when ``BENCH_KEEP`` kept it from an earlier run)."""
    keep = os.environ.get("BENCH_KEEP")
    name = (str(size) if first == MONTH else f"{size}-from-{first:%d}") + ("-rule" if idle_rule is not None else "")
    workdir = Path(keep) / name if keep else Path(tempfile.mkdtemp(prefix=f"{prefix}-{name}-"))
    server = PrometheusServer(workdir)
    try:
        done = workdir / "backfilled"
        if done.exists():
            samples, seconds = int(done.read_text()), 0.0
        else:
            samples, seconds = backfill(server, size, first=first, idle_rule=idle_rule)
            done.write_text(str(samples))
        server.start(timeout=600)
        settle(server)
        yield server, samples, seconds
    finally:
        server.stop()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def main(sizes: list[int]) -> None:
    if shutil.which("prometheus") is None:
        sys.exit("prometheus is not installed: run ./scripts/test once (it installs Debian's package)")
    print(f"digest of 2026-10-31 (UTC calendar: 31 days), 5-minute samples, {TEAMS} teams")
    print(
        f"{'namespaces':>10} {'samples':>12} {'backfill s':>10} {'1st queries':>11} {'1st s':>7} "
        f"{'queries':>8} {'digest s':>8} {'render s':>8} {'peak MiB':>9} {'chart s':>8}"
    )
    for size in sizes:
        with backfilled_prometheus(size, prefix="digest-bench") as (server, samples, seconds):
            row = measure(server, size)
            print(
                f"{size:>10} {samples:>12,} {seconds:>10.0f} {row['first_queries']:>11} {row['first']:>7.2f} "
                f"{row['queries']:>8} {row['build']:>8.2f} {row['render']:>8.2f} "
                f"{row['peak_mb']:>9.1f} {row['chart']:>8.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [100, 1000, 3000])
