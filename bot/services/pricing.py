"""The price per hour of a namespace's GPUs (or of another resource it governs): the one place that decides
it for a request's cost (card, confirmation form) and the idle nudge, so every figure the bot shows uses the
same price list.

A resource ``pricing.resources`` lists costs what it says. Otherwise, in order: the GPU models the namespace
ran the resource on over the last ``RECENT_DAYS`` days, where they ran (spot, on-demand, a priced pool: the cost
ledger, weighted by hours, at today's prices there, the answer saying the share of each when not all on-demand);
else, for NVIDIA resources, the most expensive priced model on the cluster's GPU nodes (the
``nvidia.com/gpu.product`` label GPU feature discovery sets: what it may get); else the policy's default
price. A MIG profile costs that model's price times its compute fraction (``Pricing.per_hour``). The answer
says which (a ``bot.domain.prices.Price``, worded at the edge), so people can see why a figure is what it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TypeVar

from bot.clock import Clock
from bot.domain.capacity import CapacityType, Placement
from bot.domain.clusters import HOME, cluster_of
from bot.domain.policy import Policy
from bot.domain.prices import Basis, PlacementShare, Price
from bot.domain.resources import GPU, mig_profile
from bot.errors import GpuQuotaError
from bot.services.ports import QuotaCluster, Transactions
from bot.services.stores import LedgerReads

log = logging.getLogger(__name__)
RECENT_DAYS = 7
T = TypeVar("T")


class Pricer:
    def __init__(self, *, policy: Policy, database: Transactions, cluster: QuotaCluster | None, clock: Clock) -> None:
        """``cluster`` says which GPU models the nodes have; without one, that step is skipped."""
        self._pricing = policy.pricing
        self._zone = policy.schedules.zone
        self._db = database
        self._cluster = cluster
        self._clock = clock

    def price(self, namespace: str, resource: str = GPU) -> Price:
        """The price per hour of ``resource`` in ``namespace`` (whole GPUs: per GPU-hour) and its basis."""
        hours = self._db.run(lambda repo: self.recent_hours(repo, namespace, resource))
        where = cluster_of(namespace)
        dearest = (lambda: self.dearest_on_nodes(resource, where)) if not hours and on_nvidia_nodes(resource) else None
        return self.price_from(hours, dearest, resource)

    def recent_hours(self, repo: LedgerReads, namespace: str, resource: str = GPU) -> dict[tuple[str, Placement], float]:
        """The hours of ``resource`` on each model ``namespace`` ran on lately, at each placement, read in ``repo``'s
        transaction (for ``price_from``)."""
        today = self._clock.now().astimezone(self._zone).date()  # ledger days are in this zone
        first, last = today - timedelta(days=RECENT_DAYS), today - timedelta(days=1)
        hours = repo.ledger_placement_hours(namespace, first, last, resource=resource)
        return {(model, Placement(CapacityType(capacity), pool)): h for (model, capacity, pool), h in hours.items() if h > 0}

    def price_from(
        self,
        hours: Mapping[tuple[str, Placement], float],
        dearest: Callable[[], str | None] | str | None,
        resource: str = GPU,
    ) -> Price:
        """The price of ``resource``: the one the policy lists; else from ``recent_hours``; else from ``dearest``
        (``dearest_on_nodes`` or its answer: pass None for a resource not on NVIDIA nodes); else the default."""
        pricing, currency = self._pricing, self._pricing.currency
        listed = pricing.resources.get(resource)
        if listed is not None:
            return Price(listed, Basis.LISTED, (), currency, RECENT_DAYS)
        share = pricing.derived_fraction(resource)
        if hours:
            total = sum(hours.values())
            rate = sum(h * pricing.per_hour(resource, model, where) for (model, where), h in hours.items()) / total
            per_model = _summed(hours, key=lambda item: item[0])
            per_place = _summed(hours, key=lambda item: item[1])
            ordered = tuple(sorted(per_model, key=lambda model: (-per_model[model], model)))
            placements = tuple(
                PlacementShare(where, h / total) for where, h in sorted(per_place.items(), key=lambda item: (-item[1], item[0]))
            )
            mixed = placements if any(not item.placement.on_demand for item in placements) else ()
            return Price(rate, Basis.RAN_ON, ordered, currency, RECENT_DAYS, share=share, placements=mixed)
        model = dearest() if callable(dearest) else dearest
        if model is not None:
            return Price(pricing.per_hour(resource, model), Basis.MAY_GET, (model,), currency, RECENT_DAYS, share=share)
        return Price(pricing.per_hour(resource, None), Basis.DEFAULT, (), currency, RECENT_DAYS, share=share)

    def dearest_on_nodes(self, resource: str = GPU, cluster: str = HOME) -> str | None:
        """The most expensive model of the price list found on ``cluster``'s nodes offering ``resource`` (None:
        none priced, or unknown)."""
        if self._cluster is None or not self._pricing.models:
            return None
        try:
            products = self._cluster.gpu_nodes(cluster).models_of(resource)  # the capacity view: no extra node list per request
        except GpuQuotaError as error:
            log.warning("GPU models of the nodes unknown, pricing without them: %s", error)
            return None
        priced = {_label_form(model): model for model in self._pricing.models}
        found = [priced[_label_form(product)] for product in products if _label_form(product) in priced]
        return max(found, key=self._pricing.price_for, default=None)


def _summed(hours: Mapping[tuple[str, Placement], float], *, key: Callable[[tuple[str, Placement]], T]) -> dict[T, float]:
    """``hours`` added up by ``key`` of their (model, placement)."""
    summed: dict[T, float] = {}
    for item, h in hours.items():
        summed[key(item)] = summed.get(key(item), 0.0) + h
    return summed


def on_nvidia_nodes(resource: str) -> bool:
    """Whether ``resource`` is a GPU of the NVIDIA nodes' product label (whole GPUs, a MIG profile of one)."""
    return resource == GPU or mig_profile(resource) is not None


def _label_form(model: str) -> str:
    """GPU feature discovery writes DCGM's ``NVIDIA H100 80GB HBM3`` as ``NVIDIA-H100-80GB-HBM3``: compare both alike."""
    return model.strip().replace(" ", "-").lower()
