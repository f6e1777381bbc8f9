"""What a cost figure's price is based on, as typed data: the rate, where it comes from, the models, and for a
MIG profile the policy prices by its parent GPU, the share of that GPU's price (``3/7`` for ``3g.40gb``).

The pricer (``bot.services.pricing``) decides a ``Price``; a request stores its cost's basis
(``CostBasis``: for the grant or per month, at that price) in ``requests.cost_basis`` as compact
JSON starting with ``{"cost_basis":`` (``to_text`` / ``from_text``); a basis stored as plain text
by an earlier version is read as ``BasisAsStored`` and shown exactly as stored. The Slack edge words
them (``bot.adapters.slack.prices``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

from bot.domain.capacity import CapacityType, Placement

MARKER = '{"cost_basis":'
NAMED_MODELS = 3  # more than this many models are counted, not named (the basis is shown on a card)
MODEL_NAME_LIMIT = 60  # characters of a model's name kept (requests.cost_basis holds 400)
POOL_NAME_LIMIT = 30  # characters of a pool's name kept, for the one placement shown and stored


class Basis(Enum):
    RAN_ON = "ran_on"  # the models the namespace ran on lately
    MAY_GET = "may_get"  # the most expensive model on the cluster's GPU nodes
    DEFAULT = "default"  # the policy's default price
    LISTED = "listed"  # the price pricing.resources lists for the resource


@dataclass(frozen=True)
class PlacementShare:
    """The share (0..1) of the hours a price was averaged over that ran at ``placement``."""

    placement: Placement
    share: float


@dataclass(frozen=True)
class Price:
    """``per_gpu_hour``: per hour of the resource (a GPU-hour, a MIG profile's slice-hour); ``models``: the ones
    named (``unnamed`` more were counted); ``days``: the window of ``RAN_ON``; ``share``: the share of the
    models' price a MIG profile is priced at (None: the models' price itself, or a listed one); ``placements``:
    for ``RAN_ON``, the share of the hours at each placement (most first), when any ran elsewhere than on-demand
    (spot, a priced pool); empty otherwise."""

    per_gpu_hour: float
    basis: Basis
    models: tuple[str, ...]
    currency: str
    days: int
    unnamed: int = 0
    share: Fraction | None = None
    placements: tuple[PlacementShare, ...] = ()

    def named(self) -> Price:
        """The price as it is shown and stored: the first few models, their names cut, the rest counted."""
        kept = tuple(model[:MODEL_NAME_LIMIT] for model in self.models[:NAMED_MODELS])
        rest = self.unnamed + max(0, len(self.models) - NAMED_MODELS)
        return Price(self.per_gpu_hour, self.basis, kept, self.currency, self.days, rest, self.share, _shown(self.placements))


def _shown(placements: tuple[PlacementShare, ...]) -> tuple[PlacementShare, ...]:
    """The placement a price's words name: the one (not on-demand) with the largest share, its pool's name cut."""
    elsewhere = [item for item in placements if not item.placement.on_demand]
    if not elsewhere:
        return ()
    top = max(elsewhere, key=lambda item: item.share)
    where = Placement(top.placement.capacity, top.placement.pool[:POOL_NAME_LIMIT])
    return (PlacementShare(where, round(top.share, 3)),)


@dataclass(frozen=True)
class CostBasis:
    """A request's cost: ``grant`` for the grant (else per month), at ``price``; ``named``: the models
    the request's namespace ran on are said of it by name (a shift's target) rather than "this namespace"."""

    grant: bool
    price: Price
    named: bool = False


@dataclass(frozen=True)
class BasisAsStored:
    """A basis an earlier version stored as text."""

    text: str


StoredBasis = CostBasis | BasisAsStored


def to_text(basis: CostBasis) -> str:
    price = basis.price.named()
    where = price.placements[0] if price.placements else None
    fields = {
        "cost_basis": "CostBasis",
        "grant": basis.grant,
        "named": basis.named,
        "rate": price.per_gpu_hour,
        "basis": price.basis.value,
        "models": list(price.models),
        "unnamed": price.unnamed,
        "currency": price.currency,
        "days": price.days,
        **({"share": str(price.share)} if price.share is not None else {}),
        # The one placement shown (``named``), compact: requests.cost_basis holds 400 characters.
        **({"where": [where.placement.capacity.value, where.placement.pool, where.share]} if where else {}),
    }
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def from_text(text: str) -> StoredBasis:
    """What ``to_text`` stored; any other text (an earlier version's basis) as stored."""
    if not text.startswith(MARKER):
        return BasisAsStored(text)
    data = json.loads(text)
    share = Fraction(data["share"]) if "share" in data else None  # a basis stored before MIG pricing has none
    models = tuple(data["models"])
    # A basis stored before prices per capacity type has no placement.
    where = data.get("where")
    placements = (PlacementShare(Placement(CapacityType(where[0]), where[1]), where[2]),) if where else ()
    price = Price(data["rate"], Basis(data["basis"]), models, data["currency"], data["days"], data["unnamed"], share, placements)
    return CostBasis(data["grant"], price, data["named"])
