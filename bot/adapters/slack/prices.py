"""The words of a price and a cost's basis (``bot.domain.prices``): on the card, the confirmation form
and the idle nudge. A basis an earlier version stored as text is shown as stored."""

from __future__ import annotations

from bot.adapters.slack import mrkdwn
from bot.adapters.slack.sentences import fill, join
from bot.domain.prices import Basis, BasisAsStored, Price, StoredBasis
from bot.services.text import Notice, Words, money


def price_notice(price: Price, subject: str = "this namespace") -> Notice:
    """``at 4.80 USD/h, the NVIDIA H100 80GB HBM3 price this namespace ran on`` (``subject``: who ran on it)."""
    shown = price.named()
    values = {"rate": money(shown.per_gpu_hour, shown.currency), "subject": subject}
    names = ", ".join(shown.models) + (f" and {shown.unnamed} more" if shown.unnamed else "")
    if shown.basis == Basis.RAN_ON and len(shown.models) == 1 and not shown.unnamed:
        return fill("at {rate}/h, the {names} price {subject} ran on", names=names, **values)
    if shown.basis == Basis.RAN_ON:
        return fill(
            "at {rate}/h, the average price of the {names} {subject} ran on (last {days} days)",
            names=names,
            days=shown.days,
            **values,
        )
    if shown.basis == Basis.MAY_GET:
        return fill("at {rate}/h, the {names} price (the most expensive GPU {subject} may get)", names=names, **values)
    return fill("at {rate}/h, the default price", rate=values["rate"])


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
