"""The words of a price and a cost's basis (``bot.domain.prices``): on the card, the confirmation form
and the idle nudge, in the reader's language. A basis an earlier version stored as text is shown as stored.

Each basis has its whole sentences (with and without a MIG profile's share of the price, of this namespace or
of one named); the models' names are names, listed the way the language lists things."""

from __future__ import annotations

from bot.adapters.i18n import format_money, locale, tr_n
from bot.adapters.slack import capacity_words, mrkdwn
from bot.adapters.slack.sentences import Value, fill, fill_n
from bot.domain.prices import Basis, BasisAsStored, Price, StoredBasis
from bot.services.text import Notice, Words


def price_notice(price: Price, namespace: str | None = None) -> Notice:
    """``at 4.80 USD/h, the NVIDIA H100 80GB HBM3 price this namespace ran on`` (``namespace``: who ran on it,
    None: "this namespace"); a MIG profile priced by its parent GPU says its share: ``at 1.71 USD/h, 3/7 of
    the NVIDIA A100 ... price``; hours not all on-demand say where they ran: ``(70% on spot)``."""
    return capacity_words.priced_where(_price_words(price.named(), namespace), price)


def _price_words(shown: Price, namespace: str | None) -> Notice:
    rate = format_money(shown.per_gpu_hour, shown.currency)
    if shown.basis == Basis.LISTED:
        return fill("at {rate}/h, the price the policy lists for it", rate=rate)
    if shown.basis == Basis.DEFAULT:
        if shown.share is not None:
            return fill("at {rate}/h, {share} of the default price", rate=rate, share=str(shown.share))
        return fill("at {rate}/h, the default price", rate=rate)
    values: dict[str, Value] = {"rate": rate, "names": _models(shown), "share": str(shown.share)}
    if namespace is None:
        return _of_this_namespace(shown, values)
    return _of_namespace(shown, values, namespace)


def _of_this_namespace(shown: Price, values: dict[str, Value]) -> Notice:
    shared = shown.share is not None
    if shown.basis == Basis.MAY_GET:
        if shared:
            return fill("at {rate}/h, {share} of the {names} price (the most expensive GPU this namespace may get)", **values)
        return fill("at {rate}/h, the {names} price (the most expensive GPU this namespace may get)", **values)
    if len(shown.models) == 1 and not shown.unnamed:
        if shared:
            return fill("at {rate}/h, {share} of the {names} price this namespace ran on", **values)
        return fill("at {rate}/h, the {names} price this namespace ran on", **values)
    if shared:
        return fill_n(
            "at {rate}/h, {share} of the average price of the {names} this namespace ran on (last {count} day)",
            "at {rate}/h, {share} of the average price of the {names} this namespace ran on (last {count} days)",
            shown.days,
            **values,
        )
    return fill_n(
        "at {rate}/h, the average price of the {names} this namespace ran on (last {count} day)",
        "at {rate}/h, the average price of the {names} this namespace ran on (last {count} days)",
        shown.days,
        **values,
    )


def _of_namespace(shown: Price, values: dict[str, Value], namespace: str) -> Notice:
    shared = shown.share is not None
    values = {**values, "namespace": namespace}
    if shown.basis == Basis.MAY_GET:
        if shared:
            return fill("at {rate}/h, {share} of the {names} price (the most expensive GPU {namespace} may get)", **values)
        return fill("at {rate}/h, the {names} price (the most expensive GPU {namespace} may get)", **values)
    if len(shown.models) == 1 and not shown.unnamed:
        if shared:
            return fill("at {rate}/h, {share} of the {names} price {namespace} ran on", **values)
        return fill("at {rate}/h, the {names} price {namespace} ran on", **values)
    if shared:
        return fill_n(
            "at {rate}/h, {share} of the average price of the {names} {namespace} ran on (last {count} day)",
            "at {rate}/h, {share} of the average price of the {names} {namespace} ran on (last {count} days)",
            shown.days,
            **values,
        )
    return fill_n(
        "at {rate}/h, the average price of the {names} {namespace} ran on (last {count} day)",
        "at {rate}/h, the average price of the {names} {namespace} ran on (last {count} days)",
        shown.days,
        **values,
    )


def _models(price: Price) -> str:
    """The models named, as the language lists them (``A, B, C``; ``A、B、C``), and how many more were counted."""
    names = locale().list_patterns["standard"]["middle"]
    listed = price.models[0] if price.models else ""
    for model in price.models[1:]:
        listed = names.format(listed, model)
    if not price.unnamed:
        return listed
    return tr_n("{names} and {count} more", "{names} and {count} more", price.unnamed, names=listed)


def basis_notice(basis: StoredBasis, namespace: str) -> Notice:
    """A request's cost basis (``namespace``: the request's, named when the basis says so)."""
    if isinstance(basis, BasisAsStored):
        return Notice((Words(basis.text),))
    price = price_notice(basis.price, namespace if basis.named else None)
    if basis.grant:
        return fill("for the grant, {price}", price=price)
    return fill("per month, {price}", price=price)


def render_basis(basis: StoredBasis | None, namespace: str) -> str:
    """The basis as mrkdwn ("" when there is none)."""
    return mrkdwn.render(basis_notice(basis, namespace)) if basis is not None else ""


def notice_of(price: Price | BasisAsStored) -> Notice:
    """A price, or an earlier version's words for it as they were."""
    return Notice((Words(price.text),)) if isinstance(price, BasisAsStored) else price_notice(price)


def render_price(price: Price | BasisAsStored) -> str:
    """A price (or an earlier version's words for it) as mrkdwn."""
    return mrkdwn.render(notice_of(price))
