"""How a governed resource and its hours are said: whole GPUs in GPU-hours, a MIG profile ("MIG 3g.40gb") in
slice-hours (hours of one instance of the profile), any other resource by its name in hours. Slices are
never said as GPUs, so a figure of each resource stands beside the others, never added to them."""

from __future__ import annotations

from collections.abc import Mapping

from bot.adapters.slack.sentences import fill
from bot.domain.costs import ResourceCost
from bot.domain.resources import GPU, mig_profile
from bot.services.text import Notice, money


def resource_label(resource: str) -> str:
    """``Whole GPUs``, ``MIG 3g.40gb``, or the resource's own name (``amd.com/gpu``)."""
    if resource == GPU:
        return "Whole GPUs"
    profile = mig_profile(resource)
    return f"MIG {profile.name}" if profile is not None else resource


def hours_unit(resource: str, *, short: bool = False) -> str:
    """What an hour of ``resource`` is called: GPU-hours, slice-hours (a MIG profile), hours."""
    if resource == GPU:
        return "GPU-h" if short else "GPU-hours"
    if mig_profile(resource) is not None:
        return "slice-h" if short else "slice-hours"
    return "h" if short else "hours"


def hours_of(by_resource: Mapping[str, ResourceCost], gpu_hours: float) -> str:
    """A line's hours, each resource in its own unit: ``24.0 GPU-h``, ``24.0 GPU-h, 48.0 slice-h MIG 3g.40gb``
    (whole GPUs first, always when the line has nothing else)."""
    others = sorted(resource for resource in by_resource if resource != GPU)
    parts = [f"{gpu_hours:,.1f} GPU-h"] if GPU in by_resource or not others else []
    parts += [f"{by_resource[r].hours:,.1f} {hours_unit(r, short=True)} {resource_label(r)}" for r in others]
    return ", ".join(parts)


def resource_line(resource: str, figures: ResourceCost, currency: str) -> Notice:
    """``MIG 3g.40gb: 48 slice-hours, 96.00 USD`` (and its idle hours, when some were idle)."""
    values = {
        "resource": resource_label(resource),
        "hours": _amount(figures.hours),
        "unit": hours_unit(resource),
        "cost": money(figures.cost, currency),
    }
    if figures.idle_hours <= 0:
        return fill("{resource}: {hours} {unit}, {cost}", **values)
    idle = {"idle": _amount(figures.idle_hours), "idle_cost": money(figures.idle_cost, currency)}
    return fill("{resource}: {hours} {unit}, {cost} (idle {idle} {unit}, {idle_cost})", **values, **idle)


def _amount(hours: float) -> str:
    """Hours as people write them: ``48``, ``47.5``, ``1,234.6``."""
    return f"{hours:,.1f}".removesuffix(".0")
