"""The words of a price and a cost's basis (``bot.domain.prices``): on the card, the confirmation form
and the idle nudge. A basis an earlier version stored as text is shown as stored."""

from __future__ import annotations

from bot.adapters.slack import capacity_words, mrkdwn
from bot.adapters.slack.sentences import fill, join
from bot.domain.prices import Basis, BasisAsStored, Price, StoredBasis
from bot.services.text import Notice, Words, money

# Each basis's sentence, whole (a message catalog's form): the models' price, and a MIG profile's share of it.
_SENTENCES = {
    "ran_on_one": (
        "at {rate}/h, the {names} price {subject} ran on",
        "at {rate}/h, {share} of the {names} price {subject} ran on",
    ),
    "ran_on": (
        "at {rate}/h, the average price of the {names} {subject} ran on (last {days} days)",
        "at {rate}/h, {share} of the average price of the {names} {subject} ran on (last {days} days)",
    ),
    "may_get": (
        "at {rate}/h, the {names} price (the most expensive GPU {subject} may get)",
        "at {rate}/h, {share} of the {names} price (the most expensive GPU {subject} may get)",
    ),
    "default": ("at {rate}/h, the default price", "at {rate}/h, {share} of the default price"),
}


def price_notice(price: Price, subject: str = "this namespace") -> Notice:
    """``at 4.80 USD/h, the NVIDIA H100 80GB HBM3 price this namespace ran on`` (``subject``: who ran on it); a
    MIG profile priced by its parent GPU says its share: ``at 1.71 USD/h, 3/7 of the NVIDIA A100 ... price``."""
    shown = price.named()
    rate = money(shown.per_gpu_hour, shown.currency)
    if shown.basis == Basis.LISTED:
        return fill("at {rate}/h, the price the policy lists for it", rate=rate)
    names = ", ".join(shown.models) + (f" and {shown.unnamed} more" if shown.unnamed else "")
    if shown.basis == Basis.RAN_ON:
        key = "ran_on_one" if len(shown.models) == 1 and not shown.unnamed else "ran_on"
    else:
        key = "may_get" if shown.basis == Basis.MAY_GET else "default"
    template = _SENTENCES[key][shown.share is not None]
    said = fill(template, rate=rate, names=names, subject=subject, days=shown.days, share=str(shown.share))
    return capacity_words.priced_where(said, shown)  # where those hours ran, when not all on-demand


def basis_notice(basis: StoredBasis, namespace: str) -> Notice:
    """A request's cost basis (``namespace``: the request's, named when the basis says so)."""
    if isinstance(basis, BasisAsStored):
        return Notice((Words(basis.text),))
    period = fill("for the grant") if basis.grant else fill("per month")
    subject = namespace if basis.named else "this namespace"
    return join(period, fill(", "), price_notice(basis.price, subject))


def render_basis(basis: StoredBasis | None, namespace: str) -> str:
    """The basis as mrkdwn ("" when there is none)."""
    return mrkdwn.render(basis_notice(basis, namespace)) if basis is not None else ""


def notice_of(price: Price | BasisAsStored) -> Notice:
    """A price, or an earlier version's words for it as they were."""
    return Notice((Words(price.text),)) if isinstance(price, BasisAsStored) else price_notice(price)


def render_price(price: Price | BasisAsStored) -> str:
    """A price (or an earlier version's words for it) as mrkdwn."""
    return mrkdwn.render(notice_of(price))
