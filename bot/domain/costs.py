"""Cost maths: calendar windows, GPU-hours priced per model, budgets and forecasts. Pure.

Days and months are calendar days in the configured time zone: a window runs from one local
midnight to the next, so a DST day is 23 or 25 hours long and a month ends where the calendar says.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from bot.domain.policy import Pricing

UNKNOWN_MODEL = "unknown model"


@dataclass(frozen=True)
class Window:
    """[start, end) in UTC; ``day`` is the local calendar day it covers (or began, when partial)."""

    day: date
    start: datetime
    end: datetime

    @property
    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())


def day_window(day: date, zone: ZoneInfo) -> Window:
    start = datetime.combine(day, time(0), zone).astimezone(timezone.utc)
    end = datetime.combine(day + timedelta(days=1), time(0), zone).astimezone(timezone.utc)
    return Window(day, start, end)


def month_windows(through: date, zone: ZoneInfo) -> list[Window]:
    """One window per day from the first of ``through``'s month to ``through`` itself."""
    return [day_window(through.replace(day=d), zone) for d in range(1, through.day + 1)]


def today_so_far(now: datetime, zone: ZoneInfo) -> Window:
    local = now.astimezone(zone).date()
    return Window(local, day_window(local, zone).start, now.astimezone(timezone.utc))


def month_length(day: date, zone: ZoneInfo) -> timedelta:
    first = day.replace(day=1)
    last = day.replace(day=calendar.monthrange(day.year, day.month)[1])
    return day_window(last, zone).end - day_window(first, zone).start


@dataclass(frozen=True)
class NamespaceUsage:
    """What Prometheus says one namespace used in one window.

    ``allocated_hours`` come from kube-state-metrics (GPUs requested by running pods on a node);
    the per-model figures come from DCGM, whose series carry the GPU model and the pod's namespace.
    """

    allocated_hours: float = 0.0
    model_hours: Mapping[str, float] = field(default_factory=dict)  # GPU-hours DCGM saw, by model
    idle_model_hours: Mapping[str, float] = field(default_factory=dict)  # of which under the idle threshold
    util_hours: float = 0.0  # sum of utilisation (0..1) x hours
    util_model_hours: Mapping[str, float] = field(default_factory=dict)  # the same, by model

    @property
    def observed_hours(self) -> float:
        return sum(self.model_hours.values())


def combine(usages: Iterable[NamespaceUsage]) -> NamespaceUsage:
    allocated = util = 0.0
    models: dict[str, float] = {}
    idle: dict[str, float] = {}
    util_models: dict[str, float] = {}
    for usage in usages:
        allocated += usage.allocated_hours
        util += usage.util_hours
        for into, source in ((models, usage.model_hours), (idle, usage.idle_model_hours), (util_models, usage.util_model_hours)):
            for model, hours in source.items():
                into[model] = into.get(model, 0.0) + hours
    return NamespaceUsage(allocated, models, idle, util, util_models)


@dataclass(frozen=True)
class CostLine:
    namespace: str
    team: str
    gpu_hours: float
    cost: float
    by_model: Mapping[str, tuple[float, float]]  # model -> (GPU-hours, cost)
    utilisation: float | None  # 0..1, None when DCGM saw nothing
    idle_hours: float
    idle_cost: float
    observed_hours: float = 0.0  # GPU-hours DCGM saw: the weight of ``utilisation`` when lines are added


def add_lines(lines: Sequence[CostLine]) -> CostLine:
    """Several days (or namespaces) of one namespace (or team) as one line."""
    assert lines, "add_lines needs at least one line"
    by_model: dict[str, tuple[float, float]] = {}
    for line in lines:
        for model, (hours, cost) in line.by_model.items():
            known_hours, known_cost = by_model.get(model, (0.0, 0.0))
            by_model[model] = (known_hours + hours, known_cost + cost)
    observed = sum(line.observed_hours for line in lines)
    weighted = sum((line.utilisation or 0.0) * line.observed_hours for line in lines)
    return CostLine(
        namespace=lines[0].namespace,
        team=lines[0].team,
        gpu_hours=sum(line.gpu_hours for line in lines),
        cost=sum(line.cost for line in lines),
        by_model=by_model,
        utilisation=weighted / observed if observed > 0 else None,
        idle_hours=sum(line.idle_hours for line in lines),
        idle_cost=sum(line.idle_cost for line in lines),
        observed_hours=observed,
    )


def price(namespace: str, team: str, usage: NamespaceUsage, pricing: Pricing) -> CostLine:
    """Allocated GPU-hours split across GPU models in the proportions DCGM saw, each at its price."""
    observed = usage.observed_hours
    shares = {m: h / observed for m, h in usage.model_hours.items() if h > 0} if observed > 0 else {UNKNOWN_MODEL: 1.0}
    by_model = {
        model: (usage.allocated_hours * share, usage.allocated_hours * share * pricing.price_for(model))
        for model, share in shares.items()
    }
    idle_cost = sum(hours * pricing.price_for(model) for model, hours in usage.idle_model_hours.items())
    return CostLine(
        namespace=namespace,
        team=team,
        gpu_hours=usage.allocated_hours,
        cost=sum(cost for _, cost in by_model.values()),
        by_model=by_model,
        utilisation=usage.util_hours / observed if observed > 0 else None,
        idle_hours=sum(usage.idle_model_hours.values()),
        idle_cost=idle_cost,
        observed_hours=observed,
    )


def month_end_forecast(spent: float, *, elapsed: timedelta, length: timedelta) -> float:
    """What the month will cost if the rest of it burns like it has so far."""
    if elapsed <= timedelta(0):
        return spent
    return spent * (length / elapsed)


def exhaustion(spent: float, budget: float, *, elapsed: timedelta, now: datetime, month_end: datetime) -> datetime | None:
    """When the budget runs out at the current burn, if that is before ``month_end``; None if it does
    not burn, is already out (see ``over_budget_since``), or lasts the month (a new budget starts then)."""
    if spent <= 0 or elapsed <= timedelta(0) or spent >= budget:
        return None
    burn_per_second = spent / elapsed.total_seconds()
    runs_out = now + timedelta(seconds=(budget - spent) / burn_per_second)
    return runs_out if runs_out < month_end else None


def over_budget_since(daily_costs: Mapping[date, float], budget: float) -> date | None:
    """The day the month's running total first reached ``budget``; None while it has not."""
    total = 0.0
    for day, cost in sorted(daily_costs.items()):
        total += cost
        if total >= budget:
            return day
    return None


FORECAST = "forecast"


def thresholds_to_send(
    *, percent: float, forecast_percent: float, thresholds: Sequence[int], already_sent: set[str]
) -> list[str]:
    """Which warnings fire now: the highest newly crossed threshold (lower ones it passed are settled
    with it), and the early forecast warning when the month-end forecast crosses 100 % before spend does."""
    crossed = [t for t in sorted(thresholds) if percent >= t]
    fire: list[str] = []
    if crossed and str(crossed[-1]) not in already_sent:
        fire.extend(str(t) for t in crossed if str(t) not in already_sent)
    if forecast_percent >= 100 and percent < 100 and FORECAST not in already_sent:
        fire.append(FORECAST)
    return fire


def days_in(day: date) -> int:
    return calendar.monthrange(day.year, day.month)[1]


def budget_pace(monthly_budget: float, day: date) -> float:
    """The spend per day that uses the budget exactly by the month's end."""
    return monthly_budget / days_in(day)


@dataclass(frozen=True)
class ModelUse:
    """One namespace's use of one GPU model on one day, priced: a row of the cost ledger."""

    model: str
    allocated_hours: float
    idle_hours: float
    observed_hours: float
    util_hours: float
    price: float
    cost: float
    idle_cost: float


def model_uses(usage: NamespaceUsage, pricing: Pricing) -> list[ModelUse]:
    """``usage`` split by GPU model, as ``price`` splits it: allocated hours in the proportions DCGM saw
    (all at the default price as "unknown model" when DCGM saw nothing), idle hours at each model's price."""
    observed = usage.observed_hours
    shares = {m: h / observed for m, h in usage.model_hours.items() if h > 0} if observed > 0 else {UNKNOWN_MODEL: 1.0}
    models = sorted(set(shares) | {m for m, h in usage.idle_model_hours.items() if h > 0})
    uses = []
    for model in models:
        rate = pricing.price_for(model)
        allocated = usage.allocated_hours * shares.get(model, 0.0)
        idle = usage.idle_model_hours.get(model, 0.0)
        uses.append(
            ModelUse(
                model=model,
                allocated_hours=allocated,
                idle_hours=idle,
                observed_hours=usage.model_hours.get(model, 0.0),
                util_hours=usage.util_model_hours.get(model, 0.0),
                price=rate,
                cost=allocated * rate,
                idle_cost=idle * rate,
            )
        )
    return uses


def line_of(namespace: str, team: str, uses: Sequence[ModelUse]) -> CostLine:
    """The ledger rows of one namespace (one day or many) as one line, at the prices they were recorded at."""
    by_model: dict[str, tuple[float, float]] = {}
    for use in uses:
        hours, cost = by_model.get(use.model, (0.0, 0.0))
        by_model[use.model] = (hours + use.allocated_hours, cost + use.cost)
    observed = sum(u.observed_hours for u in uses)
    return CostLine(
        namespace=namespace,
        team=team,
        gpu_hours=sum(u.allocated_hours for u in uses),
        cost=sum(u.cost for u in uses),
        by_model={m: v for m, v in by_model.items() if v[0] > 0 or v[1] > 0},
        utilisation=sum(u.util_hours for u in uses) / observed if observed > 0 else None,
        idle_hours=sum(u.idle_hours for u in uses),
        idle_cost=sum(u.idle_cost for u in uses),
        observed_hours=observed,
    )
