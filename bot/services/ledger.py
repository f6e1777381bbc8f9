"""The cost ledger: what each namespace used of each resource on each GPU model on each finished day, at each
placement (spot, on-demand, a pool the policy prices), priced at that day's price there, kept in the database.

Prometheus keeps days for its retention only (10 days in kube-prometheus-stack): month-to-date,
budgets and exports read the ledger, which records each day once it is over, from one range query
per week of days whatever the cluster's size. Recording is idempotent (a day's rows are replaced
whole, in one transaction); days missed while the bot was down are caught up from Prometheus while
it still holds them; a day it no longer holds is recorded as ``no_data`` and reported as missing,
never as zero. A day keeps the prices it was recorded with, so a price change applies from the day
it is made. Each day also keeps whether its GPU-hours could be told apart by node (``SplitState``): a day
whose kube-state-metrics exported no node labels is priced on-demand, and the digest says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, TypeVar, cast

from bot.clock import Clock
from bot.domain.capacity import CapacityType, SplitState, SplitUnavailable, allowlist_flag
from bot.domain.clusters import HOME, cluster_of
from bot.domain.costs import CostLine, ModelUse, Window, add_lines, day_window, line_of, model_uses
from bot.domain.policy import Policy, Team
from bot.errors import PartialMetrics
from bot.services.access import Access
from bot.services.ports import ClusterCoverage, Coverage, MetricsSource, Transactions
from bot.services.refusals import Asked, InNoTeam, MonthNotBegun, NotATeamOrNamespace, NotYoursToSee, Refused
from bot.services.stores import LedgerReads

log = logging.getLogger(__name__)
T = TypeVar("T")

RECORDED, NO_DATA = "recorded", "no_data"
# How far back the scheduled catch-up looks for days it missed (longer gaps: ``ledger backfill``).
CATCH_UP_LIMIT = timedelta(days=62)
UNMANAGED = "(not managed)"
# A team's daily chart draws its dearest namespaces and stacks the rest as one part (the chart's
# MAX_PARTS is 10): only those namespaces' days are read one by one.
CHART_NAMESPACES = 9
OTHERS = "others"


@dataclass(frozen=True)
class Entry:
    """A ledger row, detached from the database."""

    day: date
    namespace: str
    team: str
    cost_center: str | None
    use: ModelUse


@dataclass(frozen=True)
class Recorded:
    """What a recording did. ``recorded``: the days recorded with data (of at least one cluster); ``no_data``:
    the days no cluster read holds (recorded as such); ``missing``: per cluster (the key's cluster part), the days
    it held nothing of while another cluster did (recorded as no data for it); ``unavailable``: per cluster, why
    its metrics could not be read (its days left unrecorded: the next run tries them again); ``errors``: one line
    per such cluster and per cluster whose series a Prometheus it shares lacks. A run with errors counts as
    failed (``jobs.run_job``)."""

    recorded: list[date]
    no_data: list[date]
    missing: dict[str, list[date]] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def __add__(self, other: Recorded) -> Recorded:
        missing = {c: sorted({*self.missing.get(c, []), *other.missing.get(c, [])}) for c in {*self.missing, *other.missing}}
        return Recorded(
            sorted({*self.recorded, *other.recorded}),
            sorted({*self.no_data, *other.no_data} - {*self.recorded, *other.recorded}),
            missing,
            {**self.unavailable, **other.unavailable},
            list(dict.fromkeys([*self.errors, *other.errors])),
        )


def managed_teams(policy: Policy) -> dict[str, str]:
    """The team of each namespace the policy manages."""
    return {ns.name: team.name for team in policy.teams.values() for ns in team.namespaces}


def team_map(
    policy: Policy, metrics: MetricsSource, at: datetime, seen: set[str], unavailable: dict[str, str] | None = None
) -> dict[str, str]:
    """The team of each namespace seen: by the policy, else by its team label ("<label> (not managed)"). The
    labels of clusters whose metrics could not be read are left out (noted in ``unavailable``)."""
    managed = managed_teams(policy)
    teams = dict(managed)
    label = policy.metrics.team_label
    if label:
        for ns, value in answered(lambda: metrics.namespace_labels(at, label), unavailable).items():
            teams.setdefault(ns, f"{value} {UNMANAGED}")
    return {ns: team for ns, team in teams.items() if ns in seen or ns in managed}


def answered(call: Callable[[], T], unavailable: dict[str, str] | None = None) -> T:
    """What ``call`` returns, or what the clusters that answered returned when others could not (noted in
    ``unavailable``: cluster part -> why)."""
    try:
        return call()
    except PartialMetrics as partial:
        if unavailable is not None:
            unavailable.update(partial.unavailable)
        return cast(T, partial.figures)


def coverage_of(metrics: MetricsSource, windows: Sequence[Window], clusters: Sequence[str]) -> Coverage:
    """The days each of ``clusters`` holds: per cluster from a source that tells (``ClusterCoverage``), else the
    source's days for each."""
    if isinstance(metrics, ClusterCoverage):
        return metrics.days_by_cluster(windows)
    days = metrics.days_with_data(windows)
    return Coverage({cluster: days for cluster in clusters})


def measured_split(metrics: MetricsSource, cluster: str, day: date) -> SplitState | None:
    """Whether the source could tell ``cluster``'s GPU-hours of ``day`` apart by node (None: a source that does not
    tell)."""
    per_cluster = getattr(metrics, "cluster_splits", None)  # a wrapper may answer any name: only a mapping tells
    return per_cluster.get(cluster, {}).get(day) if isinstance(per_cluster, dict) else None


def measured_spacing(metrics: MetricsSource, cluster: str, day: date) -> dict[str, float]:
    """The sample spacing the source measured in ``cluster`` on ``day`` (none: not measured, or a source that
    does not measure it)."""
    per_cluster: dict[str, dict[date, dict[str, float]]] | None = getattr(metrics, "cluster_spacings", None)
    if per_cluster is not None:
        return per_cluster.get(cluster, {}).get(day, {})
    spacings: dict[date, dict[str, float]] = getattr(metrics, "spacings", {})
    return spacings.get(day, {}) if cluster == HOME else {}


class Ledger:
    def __init__(self, *, policy: Policy, metrics: MetricsSource | None, database: Transactions, clock: Clock) -> None:
        """Without ``metrics`` the ledger can be read (exports, the cost command) but not recorded."""
        self._policy = policy
        self._metrics = metrics
        self._db = database
        self._clock = clock

    # --- writing -------------------------------------------------------------------------------

    def run(self) -> Recorded:
        """The scheduled job: record yesterday (and any finished day missed before it), once it is over.
        A Prometheus failure raises (or, of some clusters only, is in the result's ``errors``): the run counts
        as failed and the next run (or the digest) catches up."""
        yesterday = (self._clock.now().astimezone(self._policy.schedules.zone) - timedelta(days=1)).date()
        done = self.catch_up(yesterday)
        if done.recorded:
            log.info("ledger: recorded %s", day_ranges(done.recorded))
        return done

    def catch_up(self, through: date) -> Recorded:
        """Record every finished day up to ``through`` not in the ledger yet for every cluster: from the first of
        its month, or from the day after the last one recorded when that is earlier (within ``CATCH_UP_LIMIT``).
        A day recorded for some clusters is recorded for the others only."""
        first = through.replace(day=1)
        latest = self._db.run(lambda repo: repo.latest_ledger_day())
        if latest is not None and latest < first:
            first = max(latest + timedelta(days=1), through - CATCH_UP_LIMIT)
        return self.record_unknown([first + timedelta(days=i) for i in range((through - first).days + 1)])

    def record_unknown(self, days: Sequence[date]) -> Recorded:
        """Record each of ``days`` for the clusters it is not in the ledger for yet (one recording per set of
        such clusters: usually one for all the days)."""
        known = self.cluster_status(days)
        todo: dict[tuple[str, ...], list[date]] = {}
        for day in days:
            unknown = tuple(c for c in self._policy.cluster_names() if c not in known.get(day, {}))
            if unknown:
                todo.setdefault(unknown, []).append(day)
        return sum((self.record(of, clusters=clusters) for clusters, of in todo.items()), Recorded([], []))

    def record(self, days: Sequence[date], *, clusters: Sequence[str] | None = None) -> Recorded:
        """Record (or record again) ``days`` of ``clusters`` (by the key's cluster part; default: every cluster of
        the policy); days not over yet are left out. A cluster whose metrics could not be read keeps its days
        unrecorded, and the others are recorded (``Recorded.errors`` says which and why)."""
        metrics = self._metrics
        assert metrics is not None, "recording needs a metrics source"
        zone = self._policy.schedules.zone
        today = self._clock.now().astimezone(zone).date()
        windows = [day_window(d, zone) for d in sorted(set(days)) if d < today]
        if not windows:
            return Recorded([], [])
        wanted = list(clusters) if clusters is not None else self._policy.cluster_names()
        coverage = coverage_of(metrics, windows, wanted)
        unavailable = dict(coverage.unavailable)
        held = {cluster: coverage.held.get(cluster, set()) for cluster in wanted}
        present = [w for w in windows if any(w.day in held[c] for c in wanted if c not in unavailable)]
        usage = answered(lambda: metrics.usage(present), unavailable) if present else {}
        seen = {ns for per_day in usage.values() for ns in per_day}
        at = present[-1].end if present else windows[-1].end
        teams = team_map(self._policy, metrics, at, seen, unavailable) if present else {}
        label = self._policy.metrics.cost_center_label
        centers = answered(lambda: metrics.namespace_labels(at, label), unavailable) if present and label else {}
        readable = [cluster for cluster in wanted if cluster not in unavailable]
        managed = managed_teams(self._policy)
        for window in windows:
            entries = [
                Entry(window.day, ns, teams[ns], centers.get(ns), use)
                for ns, ns_usage in sorted(usage.get(window.day, {}).items())
                if ns in teams and (ns_usage.held or ns in managed) and cluster_of(ns) in readable
                for use in model_uses(ns_usage, self._policy.pricing)
            ]
            self._write(window, entries, {c: window.day in held[c] for c in readable}, metrics)
        return self._outcome(windows, held, readable, unavailable, coverage.absent)

    def _outcome(
        self,
        windows: Sequence[Window],
        held: dict[str, set[date]],
        readable: Sequence[str],
        unavailable: dict[str, str],
        absent: dict[str, str],
    ) -> Recorded:
        days = [w.day for w in windows]
        recorded = [d for d in days if any(d in held[c] for c in readable)]
        no_data = [d for d in days if d not in recorded]
        if no_data and readable:
            log.info("ledger: no metrics for %s", day_ranges(no_data))
        missing = {c: days_of for c in readable if (days_of := [d for d in recorded if d not in held[c]])}
        names = self._policy.cluster_label
        unread = {cluster: why for cluster, why in unavailable.items() if cluster in held}
        errors = [*dict.fromkeys(unread.values())]
        errors += [f"cluster {names(c)}: {why}" for c, why in sorted(absent.items()) if c in readable]
        return Recorded(recorded if readable else [], no_data if readable else [], missing, unread, errors)

    def _write(self, window: Window, entries: list[Entry], has_data: dict[str, bool], metrics: MetricsSource) -> None:
        """The day's rows of each cluster of ``has_data`` replaced whole, in one transaction."""
        now = self._clock.now()
        rows: dict[str, list[dict[str, Any]]] = {cluster: [] for cluster in has_data}
        for entry in entries:
            rows[cluster_of(entry.namespace)].append(
                {
                    "day": entry.day,
                    "namespace": entry.namespace,
                    "model": entry.use.model,
                    "resource": entry.use.resource,
                    "capacity_type": entry.use.capacity.value,
                    "pool": entry.use.pool,
                    "team": entry.team,
                    "cost_center": entry.cost_center,
                    "allocated_hours": entry.use.allocated_hours,
                    "idle_hours": entry.use.idle_hours,
                    "observed_hours": entry.use.observed_hours,
                    "util_hours": entry.use.util_hours,
                    "price": entry.use.price,
                    "cost": entry.use.cost,
                    "idle_cost": entry.use.idle_cost,
                }
            )
        with self._db.transaction() as repo:
            for cluster, of_cluster in rows.items():
                spacing = measured_spacing(metrics, cluster, window.day)
                repo.replace_ledger_day(
                    window.day,
                    cluster=cluster,
                    status=RECORDED if has_data[cluster] else NO_DATA,
                    recorded_at=now,
                    ksm_spacing=spacing.get("ksm"),
                    dcgm_spacing=spacing.get("dcgm"),
                    entries=of_cluster,
                    split=split.value if has_data[cluster] and (split := measured_split(metrics, cluster, window.day)) else None,
                )

    # --- reading -------------------------------------------------------------------------------

    def cluster_status(self, days: Iterable[date]) -> dict[date, dict[str, str]]:
        """Per day of ``days`` in the ledger, ``recorded`` or ``no_data`` for each cluster of the policy it is
        recorded for (by the key's cluster part)."""
        wanted = sorted(set(days))
        if not wanted:
            return {}
        rows = self._db.run(lambda repo: repo.ledger_status(wanted[0], wanted[-1]))
        clusters, chosen = set(self._policy.cluster_names()), set(wanted)
        found: dict[date, dict[str, str]] = {}
        for day, cluster, status in rows:
            if day in chosen and cluster in clusters:
                found.setdefault(day, {})[cluster] = status
        return found

    def status(self, days: Iterable[date]) -> dict[date, str]:
        """``recorded`` or ``no_data`` for each of ``days`` in the ledger: recorded when it is recorded with data
        for any cluster, ``no_data`` when every cluster is known to hold nothing of it; a day neither (not
        recorded for every cluster yet, with data for none) is left out."""
        every = set(self._policy.cluster_names())
        found: dict[date, str] = {}
        for day, per_cluster in self.cluster_status(days).items():
            if RECORDED in per_cluster.values():
                found[day] = RECORDED
            elif set(per_cluster) == every:
                found[day] = NO_DATA
        return found

    def missing_in(self, days: Iterable[date]) -> dict[str, list[date]]:
        """With several clusters: per cluster (its name in the policy), the days of ``days`` recorded with data
        for another cluster but not for it (it held nothing, or its metrics could not be read yet)."""
        clusters = self._policy.cluster_names()
        if len(clusters) < 2:
            return {}
        status = self.cluster_status(days)
        recorded = sorted(day for day, per_cluster in status.items() if RECORDED in per_cluster.values())
        found = {
            self._policy.cluster_label(cluster): [day for day in recorded if status[day].get(cluster) != RECORDED]
            for cluster in clusters
        }
        return {cluster: days_of for cluster, days_of in found.items() if days_of}

    def cluster_name(self, namespace: str) -> str:
        """The cluster of a namespace key as the policy names it ("" without clusters)."""
        return self._policy.cluster_label(cluster_of(namespace))

    def entries(self, first: date, last: date) -> list[Entry]:
        # Plain column tuples, not ORM objects: a month of 3,000 namespaces is ~100,000 rows.
        rows = self._db.run(lambda repo: repo.ledger_entries(first, last))
        return [Entry(r[0], r[1], r[2], r[3], _use_of(r)) for r in rows]

    def unsplit(self, first: date, last: date) -> list[SplitUnavailable]:
        """The recorded days of [first, last] whose GPU-hours could not be told apart by node, per cluster and why;
        none when the policy's prices do not depend on the node (the split then changes no figure)."""
        if not self._policy.pricing.by_node:
            return []
        rows = self._db.run(lambda repo: repo.ledger_splits(first, last))
        clusters = set(self._policy.cluster_names())
        found: dict[tuple[str, SplitState], list[date]] = {}
        for day, cluster, split in rows:
            if cluster in clusters and split is not None and split != SplitState.SPLIT:
                found.setdefault((cluster, SplitState(split)), []).append(day)
        flag = allowlist_flag(self._policy.pricing.pool_label)
        return [
            SplitUnavailable(state, tuple(sorted(days)), self._policy.cluster_label(cluster), flag)
            for (cluster, state), days in sorted(found.items())
        ]

    def team_day_costs(self, first: date, last: date) -> dict[str, dict[date, float]]:
        """Per team, the cost of each recorded day, summed in the database by day and team (what budgets
        need, cheaply). A namespace recorded under another team than the policy's now (it moved) is
        summed apart and moved over."""
        managed = managed_teams(self._policy)

        def read(repo: LedgerReads) -> tuple[list[tuple[date, str, float]], list[tuple[date, str, str, float | None]]]:
            moved = sorted(ns for ns, team in repo.ledger_namespace_teams(first, last) if managed.get(ns, team) != team)
            return repo.ledger_team_costs(first, last), repo.ledger_costs(first, last, namespaces=moved) if moved else []

        totals, moved_rows = self._db.run(read)
        costs: dict[str, dict[date, float]] = {}
        for day, team, cost in totals:
            per_day = costs.setdefault(team, {})
            per_day[day] = per_day.get(day, 0.0) + cost
        for day, namespace, recorded, moved_cost in moved_rows:
            amount = float(moved_cost or 0.0)
            costs[recorded][day] -= amount
            per_day = costs.setdefault(managed[namespace], {})
            per_day[day] = per_day.get(day, 0.0) + amount
        return costs

    def summary(self, first: date, last: date) -> Summary:
        """[first, last] as the digest needs it, summed in the database: per namespace its line over the days
        and its line of ``last``; per team each day's cost, by namespace for its ``CHART_NAMESPACES``
        dearest and as ``OTHERS`` for the rest (what the stacked chart draws); and each namespace's team
        (the policy's for the namespaces it manages, else the one recorded last)."""

        def read(repo: LedgerReads) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
            return repo.ledger_sums(first, last), repo.ledger_sums(last, last)

        month_rows, day_rows = self._db.run(read)
        latest: dict[str, tuple[date, str]] = {}
        for row in month_rows:
            namespace, team, seen_last = row[0], row[1], row[9]
            if namespace not in latest or seen_last > latest[namespace][0]:
                latest[namespace] = (seen_last, team)
        teams = {**{ns: team for ns, (_, team) in latest.items()}, **managed_teams(self._policy)}
        month = _lines_of(month_rows, teams)
        team_days = self.team_day_costs(first, last)
        charted: dict[str, list[str]] = {}
        for line in sorted(month.values(), key=lambda line: line.cost, reverse=True):
            if len(charted.setdefault(line.team, [])) < CHART_NAMESPACES:
                charted[line.team].append(line.namespace)
        names = sorted(ns for per_team in charted.values() for ns in per_team)
        rows = self._db.run(lambda repo: repo.ledger_costs(first, last, namespaces=names)) if names else []
        team_daily: dict[str, dict[date, dict[str, float]]] = {
            team: {day: {OTHERS: cost} for day, cost in per_day.items()} for team, per_day in team_days.items()
        }
        for day, namespace, _, cost in rows:
            amount = float(cost or 0.0)
            parts = team_daily.setdefault(teams[namespace], {}).setdefault(day, {OTHERS: 0.0})
            parts[namespace] = parts.get(namespace, 0.0) + amount
            parts[OTHERS] -= amount
        for per_day in team_daily.values():
            for parts in per_day.values():
                if abs(parts.get(OTHERS, 0.0)) < 1e-6:  # no namespace left out that day
                    parts.pop(OTHERS, None)
        days = sorted({day for per_day in team_days.values() for day in per_day})
        return Summary(month=month, last_day=_lines_of(day_rows, teams), days=days, team_daily=team_daily, teams=teams)

    def lines(self, first: date, last: date) -> tuple[dict[date, dict[str, CostLine]], dict[str, str]]:
        """Per day per namespace, the recorded lines; and each namespace's team (the policy's for the
        namespaces it manages, else the one recorded)."""
        grouped: dict[tuple[date, str], list[Entry]] = {}
        for entry in self.entries(first, last):
            grouped.setdefault((entry.day, entry.namespace), []).append(entry)
        managed = managed_teams(self._policy)  # once: the policy's own lookup scans every team
        teams: dict[str, str] = dict(managed)
        days: dict[date, dict[str, CostLine]] = {}
        for (day, namespace), entries in grouped.items():
            team = managed.get(namespace) or entries[-1].team
            teams[namespace] = team
            days.setdefault(day, {})[namespace] = line_of(namespace, team, [e.use for e in entries])
        return days, teams


@dataclass(frozen=True)
class Summary:
    month: dict[str, CostLine]  # per namespace, over the days asked for
    last_day: dict[str, CostLine]  # per namespace, the last of them
    days: list[date]  # the days with costs
    team_daily: dict[str, dict[date, dict[str, float]]]  # team -> day -> namespace or OTHERS -> cost
    teams: dict[str, str]


def _use_of(row: tuple[Any, ...]) -> ModelUse:
    """A ``ledger_entries`` row's use (its columns from the model on)."""
    model, allocated, idle, observed, util, price, cost, idle_cost, resource, capacity, pool = row[4:15]
    return ModelUse(model, allocated, idle, observed, util, price, cost, idle_cost, resource, CapacityType(capacity), pool)


def _lines_of(rows: list[tuple[Any, ...]], teams: dict[str, str]) -> dict[str, CostLine]:
    """Rows of ``ledger_sums`` as one line per namespace (the sums carry no single price: 0)."""
    uses: dict[str, list[ModelUse]] = {}
    for namespace, _, model, allocated, idle, observed, util, cost, idle_cost, _, resource, capacity, pool in rows:
        use = ModelUse(model, allocated, idle, observed, util, 0.0, cost, idle_cost, resource, CapacityType(capacity), pool)
        uses.setdefault(namespace, []).append(use)
    return {ns: line_of(ns, teams[ns], ns_uses) for ns, ns_uses in uses.items()}


def day_ranges(days: Iterable[date]) -> str:
    """Days as short ranges: "3-9 Nov, 12 Nov"."""
    ordered = sorted(set(days))
    parts: list[str] = []
    start = previous = None
    for day in [*ordered, None]:
        if start is not None and previous is not None and (day is None or day - previous != timedelta(days=1)):
            if start == previous:
                parts.append(f"{start.day} {start:%b}")
            elif start.month == previous.month:
                parts.append(f"{start.day}-{previous.day} {previous:%b}")
            else:
                parts.append(f"{start.day} {start:%b}-{previous.day} {previous:%b}")
            start = None
        if day is not None:
            start = start or day
            previous = day
    return ", ".join(parts)


def export_rows(ledger: Ledger, month: date, *, currency: str) -> list[dict[str, object]]:
    """The month's ledger for finance: one row per day x namespace x resource x GPU model x placement, in day order
    (the hours and the price of a row are of its resource: slice-hours of a MIG profile); ``cluster`` is the
    cluster of the namespace key as the policy names it (the home cluster's name for a bare name; "" without
    clusters); ``capacity_type`` is spot or on-demand (unknown nodes: on-demand) and ``pool`` the pool the policy
    priced the row in ("" for none)."""
    first = month.replace(day=1)
    last = (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    teams = ledger.summary(first, last).teams
    return [
        {
            "day": entry.day.isoformat(),
            "namespace": entry.namespace,
            "team": teams.get(entry.namespace, entry.team),
            "cost_center": entry.cost_center or "",
            "gpu_model": entry.use.model,
            "gpu_hours": round(entry.use.allocated_hours, 6),
            "idle_gpu_hours": round(entry.use.idle_hours, 6),
            "utilisation": round(entry.use.util_hours / entry.use.observed_hours, 6) if entry.use.observed_hours else "",
            "price_per_gpu_hour": entry.use.price,
            "cost": round(entry.use.cost, 6),
            "idle_cost": round(entry.use.idle_cost, 6),
            "currency": currency,
            "resource": entry.use.resource,
            "cluster": ledger.cluster_name(entry.namespace),
            "capacity_type": entry.use.capacity.value,
            "pool": entry.use.pool,
        }
        for entry in ledger.entries(first, last)
    ]


@dataclass(frozen=True)
class CostAnswer:
    """The ledger's figures for one team or namespace over one month (what ``/gpu-quota cost`` shows)."""

    scope: str  # a team's label, or a namespace
    month: date
    recorded_through: date | None  # the last day in the ledger (the month may be under way)
    line: CostLine | None  # None: nothing recorded
    budget: float | None
    missing: list[date]
    # With several clusters: per cluster of the scope's namespaces (its name), the days counted for others only.
    missing_in: dict[str, list[date]] = field(default_factory=dict)
    # The days of the scope's clusters whose GPU-hours could not be told apart by node (priced on-demand).
    unsplit: list[SplitUnavailable] = field(default_factory=list)


class CostLookup:
    """``/gpu-quota cost``: from the ledger only (no Prometheus query), for the team's people (members,
    approvers, owners) and admins."""

    def __init__(self, *, policy: Policy, ledger: Ledger, access: Access, clock: Clock) -> None:
        self._policy = policy
        self._ledger = ledger
        self._access = access
        self._clock = clock

    def answer(self, *, user: str, target: str | None, month: date | None) -> list[CostAnswer]:
        zone = self._policy.schedules.zone
        today = self._clock.now().astimezone(zone).date()
        first = (month or today).replace(day=1)
        if first > today:
            raise Refused(MonthNotBegun(first))
        last = min((first + timedelta(days=32)).replace(day=1) - timedelta(days=1), today - timedelta(days=1))
        scopes = self._scopes(user, target)
        by_namespace = self._ledger.summary(first, last).month if last >= first else {}
        days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
        status = self._ledger.status(days)
        missing = sorted(d for d, s in status.items() if s == NO_DATA)
        missing_in = self._ledger.missing_in(days)
        recorded = max((d for d, s in status.items() if s == RECORDED), default=None)
        unsplit = self._ledger.unsplit(first, last) if last >= first else []
        answers = []
        for scope, namespaces, budget in scopes:
            lines = [line for ns, line in by_namespace.items() if ns in namespaces]
            combined = add_lines(lines) if lines else None
            clusters = {self._ledger.cluster_name(namespace) for namespace in namespaces}
            of_scope = {cluster: days_of for cluster, days_of in missing_in.items() if cluster in clusters}
            facts = [fact for fact in unsplit if fact.cluster in clusters]
            answers.append(CostAnswer(scope, first, recorded, combined, budget, missing, of_scope, facts))
        return answers

    def _scopes(self, user: str, target: str | None) -> list[tuple[str, set[str], float | None]]:
        if target is None:
            teams = self._access.teams_of(user)
            if not teams:
                raise Refused(InNoTeam(Asked.COST))
        elif target in self._policy.teams:
            teams = [self._policy.teams[target]]
        else:
            team = self._policy.team_of(target)
            if team is None:
                raise Refused(NotATeamOrNamespace(target))
            self._check(user, team)
            return [(target, {target}, None)]
        for team in teams:
            self._check(user, team)
        return [(t.label, {ns.name for ns in t.namespaces}, t.budget.monthly if t.budget else None) for t in teams]

    def _check(self, user: str, team: Team) -> None:
        if not (self._access.belongs_to(user, team) or self._access.is_admin(user)):
            raise Refused(NotYoursToSee(team.label))
