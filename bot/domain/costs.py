"""Cost maths: calendar windows, GPU-hours priced per model and resource, budgets and forecasts. Pure.

Days and months are calendar days in the configured time zone: a window runs from one local
midnight to the next, so a DST day is 23 or 25 hours long and a month ends where the calendar says.

Each governed resource is counted in its own hours: whole GPUs (``nvidia.com/gpu``) in GPU-hours, a MIG
profile in slice-hours (hours of one instance of the profile), any other resource in its own. They are
never added to each other; money is, so a line's ``cost`` is what all of them cost together.

Each hour is priced where it ran (``bot.domain.capacity.Placement``: spot, on-demand, a pool the policy
prices): a usage split by placement is priced part by part, and a usage without a split is on-demand.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, field, replace
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from bot.domain.capacity import ON_DEMAND_PLACEMENT, CapacityType, Placement
from bot.domain.policy import Pricing
from bot.domain.resources import GPU

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
    """What Prometheus says one namespace used of whole GPUs (``nvidia.com/gpu``) in one window, and of each
    other governed resource in ``other_resources`` (the same figures: a MIG profile's in slice-hours).

    ``allocated_hours`` come from kube-state-metrics (what running pods on a node request);
    the per-model figures come from DCGM, whose series carry the GPU model (a MIG instance's parent GPU's)
    and the pod's namespace.
    """

    allocated_hours: float = 0.0
    model_hours: Mapping[str, float] = field(default_factory=dict)  # GPU-hours DCGM saw, by model
    idle_model_hours: Mapping[str, float] = field(default_factory=dict)  # of which under the idle threshold
    util_hours: float = 0.0  # sum of utilisation (0..1) x hours
    util_model_hours: Mapping[str, float] = field(default_factory=dict)  # the same, by model
    other_resources: Mapping[str, NamespaceUsage] = field(default_factory=dict)  # resource -> its use, apart
    # The same figures split by where they ran (each part without other_resources); empty: all on-demand (or
    # unknown nodes). When set, the parts add up to the figures above.
    placed: Mapping[Placement, NamespaceUsage] = field(default_factory=dict)

    @property
    def observed_hours(self) -> float:
        return sum(self.model_hours.values())

    @property
    def held(self) -> bool:
        """Whether running pods of the namespace requested any of the resources in the window."""
        return any(part.allocated_hours > 0 for part in self.by_resource().values())

    def by_resource(self) -> dict[str, NamespaceUsage]:
        """Each resource's use on its own: whole GPUs (when seen, or when nothing else was) and each other one."""
        whole = replace(self, other_resources={})
        seen = whole.allocated_hours > 0 or whole.observed_hours > 0
        return {**({GPU: whole} if seen or not self.other_resources else {}), **self.other_resources}


def placed_usage(parts: Mapping[Placement, NamespaceUsage]) -> NamespaceUsage:
    """The use of one namespace and resource from its parts at each placement: added up, the parts kept in
    ``placed`` unless all of it is on-demand."""
    total = NamespaceUsage(
        sum(part.allocated_hours for part in parts.values()),
        _added(part.model_hours for part in parts.values()),
        _added(part.idle_model_hours for part in parts.values()),
        sum(part.util_hours for part in parts.values()),
        util_model_hours=_added(part.util_model_hours for part in parts.values()),
    )
    return total if set(parts) <= {ON_DEMAND_PLACEMENT} else replace(total, placed=dict(parts))


def _added(tables: Iterable[Mapping[str, float]]) -> dict[str, float]:
    summed: dict[str, float] = {}
    for table in tables:
        for key, value in table.items():
            summed[key] = summed.get(key, 0.0) + value
    return summed


@dataclass(frozen=True)
class ResourceCost:
    """One resource's use in a line: its hours (GPU-hours, a MIG profile's slice-hours), their cost, the idle
    hours and their cost, and the hours DCGM saw with their utilisation."""

    hours: float = 0.0
    cost: float = 0.0
    idle_hours: float = 0.0
    idle_cost: float = 0.0
    observed_hours: float = 0.0
    util_hours: float = 0.0

    @property
    def utilisation(self) -> float | None:
        """0..1, weighted by the hours DCGM saw; None when it saw nothing."""
        return self.util_hours / self.observed_hours if self.observed_hours > 0 else None

    def __add__(self, other: ResourceCost) -> ResourceCost:
        return ResourceCost(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


@dataclass(frozen=True)
class CostLine:
    """A namespace's (or team's) use over some days. ``cost`` is the money of every resource; the hours, the
    models, the utilisation and the idle figures are of whole GPUs; ``by_resource`` holds each resource's own
    figures (whole GPUs included), so MIG slices are shown beside GPUs, never added to them."""

    namespace: str
    team: str
    gpu_hours: float
    cost: float
    by_model: Mapping[str, tuple[float, float]]  # model -> (GPU-hours, cost), whole GPUs
    utilisation: float | None  # 0..1, None when DCGM saw nothing
    idle_hours: float
    idle_cost: float
    observed_hours: float = 0.0  # GPU-hours DCGM saw: the weight of ``utilisation`` when lines are added
    by_resource: Mapping[str, ResourceCost] = field(default_factory=dict)
    # Each resource's figures per placement (spot, on-demand, a priced pool): (placement, resource) -> figures.
    by_placement: Mapping[tuple[Placement, str], ResourceCost] = field(default_factory=dict)

    @property
    def other_resources(self) -> dict[str, ResourceCost]:
        """The resources other than whole GPUs, with their figures."""
        return {resource: figures for resource, figures in self.by_resource.items() if resource != GPU}

    def placements(self) -> dict[Placement, PlacementCost]:
        """Per placement, its whole GPUs' figures and the money of every resource there (on-demand first, then
        spot, then the pools by name)."""
        found: dict[Placement, PlacementCost] = {}
        for (placement, resource), figures in sorted(self.by_placement.items(), key=lambda item: _placement_order(item[0][0])):
            known = found.get(placement, PlacementCost())
            gpu = known.gpu + figures if resource == GPU else known.gpu
            found[placement] = PlacementCost(gpu, known.cost + figures.cost)
        return found

    @property
    def split(self) -> bool:
        """Whether any of the line ran elsewhere than on on-demand nodes (spot, a priced pool)."""
        return any(not placement.on_demand for placement, _ in self.by_placement)


def _placement_order(placement: Placement) -> tuple[bool, str, str]:
    """On-demand first, then spot, then the pools by name."""
    return (bool(placement.pool), placement.capacity.value, placement.pool)


@dataclass(frozen=True)
class PlacementCost:
    """A line's figures at one placement: its whole GPUs' hours and figures, and the cost of every resource there."""

    gpu: ResourceCost = ResourceCost()
    cost: float = 0.0


def add_lines(lines: Sequence[CostLine]) -> CostLine:
    """Several days (or namespaces) of one namespace (or team) as one line."""
    assert lines, "add_lines needs at least one line"
    by_model: dict[str, tuple[float, float]] = {}
    by_resource: dict[str, ResourceCost] = {}
    by_placement: dict[tuple[Placement, str], ResourceCost] = {}
    for line in lines:
        for model, (hours, cost) in line.by_model.items():
            known_hours, known_cost = by_model.get(model, (0.0, 0.0))
            by_model[model] = (known_hours + hours, known_cost + cost)
        for resource, figures in line.by_resource.items():
            by_resource[resource] = by_resource.get(resource, ResourceCost()) + figures
        for key, figures in line.by_placement.items():
            by_placement[key] = by_placement.get(key, ResourceCost()) + figures
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
        by_resource=by_resource,
        by_placement=by_placement,
    )


def price(namespace: str, team: str, usage: NamespaceUsage, pricing: Pricing) -> CostLine:
    """Each resource's allocated hours split across GPU models in the proportions DCGM saw, each at its price
    (``model_uses``), as one line."""
    return line_of(namespace, team, model_uses(usage, pricing))


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
    """One namespace's use of one resource on one GPU model on one day, priced: a row of the cost ledger
    (hours and price per hour of the resource: GPU-hours of whole GPUs, slice-hours of a MIG profile)."""

    model: str
    allocated_hours: float
    idle_hours: float
    observed_hours: float
    util_hours: float
    price: float
    cost: float
    idle_cost: float
    resource: str = GPU
    capacity: CapacityType = CapacityType.ON_DEMAND  # of the nodes it ran on (unknown: on-demand)
    pool: str = ""  # the pool the policy prices it in ("": none)

    @property
    def placement(self) -> Placement:
        return Placement(self.capacity, self.pool)


def model_uses(usage: NamespaceUsage, pricing: Pricing) -> list[ModelUse]:
    """``usage`` split by resource, placement and GPU model: each resource's allocated hours at each placement in
    the proportions of the models DCGM saw of it there (of the whole resource when DCGM saw nothing there; all as
    "unknown model" when it saw nothing at all), idle hours at each model's price, each at its price per hour on
    that model there (``Pricing.per_hour``). A usage without a split is on-demand."""
    return [
        use
        for resource, part in usage.by_resource().items()
        for placement, placed in (sorted(part.placed.items()) or [(ON_DEMAND_PLACEMENT, part)])
        for use in _resource_uses(resource, placed, pricing, placement, whole=part)
    ]


def _resource_uses(
    resource: str, usage: NamespaceUsage, pricing: Pricing, placement: Placement, *, whole: NamespaceUsage
) -> list[ModelUse]:
    seen = usage if usage.observed_hours > 0 else whole
    observed = seen.observed_hours
    shares = {m: h / observed for m, h in seen.model_hours.items() if h > 0} if observed > 0 else {UNKNOWN_MODEL: 1.0}
    models = sorted(set(shares) | {m for m, h in usage.idle_model_hours.items() if h > 0})
    uses = []
    for model in models:
        rate = pricing.per_hour(resource, model, placement)
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
                resource=resource,
                capacity=placement.capacity,
                pool=placement.pool,
            )
        )
    return uses


def line_of(namespace: str, team: str, uses: Sequence[ModelUse]) -> CostLine:
    """The ledger rows of one namespace (one day or many) as one line, at the prices they were recorded at:
    the whole GPUs' figures per model, each resource's apart, the money of all."""
    by_model: dict[str, tuple[float, float]] = {}
    by_resource: dict[str, ResourceCost] = {}
    by_placement: dict[tuple[Placement, str], ResourceCost] = {}
    for use in uses:
        figures = ResourceCost(use.allocated_hours, use.cost, use.idle_hours, use.idle_cost, use.observed_hours, use.util_hours)
        by_resource[use.resource] = by_resource.get(use.resource, ResourceCost()) + figures
        key = (use.placement, use.resource)
        by_placement[key] = by_placement.get(key, ResourceCost()) + figures
        if use.resource == GPU:
            hours, cost = by_model.get(use.model, (0.0, 0.0))
            by_model[use.model] = (hours + use.allocated_hours, cost + use.cost)
    whole = by_resource.get(GPU, ResourceCost())
    return CostLine(
        namespace=namespace,
        team=team,
        gpu_hours=whole.hours,
        cost=sum(figures.cost for figures in by_resource.values()),
        by_model={m: v for m, v in by_model.items() if v[0] > 0 or v[1] > 0},
        utilisation=whole.utilisation,
        idle_hours=whole.idle_hours,
        idle_cost=whole.idle_cost,
        observed_hours=whole.observed_hours,
        by_resource=by_resource,
        by_placement=by_placement,
    )
