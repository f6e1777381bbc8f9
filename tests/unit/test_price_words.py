"""A price and a cost's basis: typed, stored as compact JSON, worded at the Slack edge in the words the
pricer used to make, and in Chinese; a basis stored as text by the version before is shown exactly as stored."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.adapters.i18n import speaking
from bot.adapters.slack.prices import render_basis, render_price
from bot.adapters.slack.words import render
from bot.domain import prices as p
from bot.domain.languages import Language
from bot.services.messages import IdleNudge, from_json, to_json
from tests.language_checks import catalog_misses, foreign_words

H100 = "NVIDIA H100 80GB HBM3"

WORDED = [
    (p.Price(4.8, p.Basis.RAN_ON, (H100,), "USD", 7), f"at 4.80 USD/h, the {H100} price this namespace ran on"),
    (
        p.Price(3.0, p.Basis.RAN_ON, ("A", "B", "C", "D", "E"), "USD", 7),
        "at 3.00 USD/h, the average price of the A, B, C and 2 more this namespace ran on (last 7 days)",
    ),
    (
        p.Price(4.0, p.Basis.MAY_GET, (H100,), "EUR", 7),
        f"at 4.00 EUR/h, the {H100} price (the most expensive GPU this namespace may get)",
    ),
    (p.Price(1.0, p.Basis.DEFAULT, (), "USD", 7), "at 1.00 USD/h, the default price"),
]


@pytest.mark.parametrize(("price", "words"), WORDED)
def test_a_price_reads_as_the_pricer_wrote_it(price: p.Price, words: str) -> None:
    assert render_price(price) == words


@pytest.mark.parametrize(("price", "words"), WORDED)
@pytest.mark.parametrize(("grant", "named"), [(True, False), (False, True)])
def test_a_price_and_a_basis_read_in_chinese_with_the_models_and_namespace_named(
    price: p.Price, words: str, grant: bool, named: bool
) -> None:
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        chinese = render_price(price)
        basis = render_basis(p.CostBasis(grant, price, named), "team-b")
    assert missed == set()
    assert chinese != words and price.currency not in chinese  # the locale's symbol: US$, €
    names = [*price.models, "team-b"]
    assert foreign_words(chinese, values=names) == [] and foreign_words(basis, values=names) == []
    assert [model for model in price.named().models if model not in chinese] == []
    said_of = named and price.basis != p.Basis.DEFAULT  # the default price is nobody's in particular
    assert ("team-b" in basis) == said_of and (chinese in basis) == (not said_of)


def test_a_cost_basis_comes_back_from_its_stored_text_in_the_same_words() -> None:
    basis = p.CostBasis(grant=False, price=p.Price(3.0, p.Basis.RAN_ON, ("A", "B", "C", "D"), "USD", 7), named=True)
    stored = p.to_text(basis)
    assert stored.startswith(p.MARKER)
    assert render_basis(p.from_text(stored), "team-b") == render_basis(basis, "team-b")
    assert (
        render_basis(basis, "team-b")
        == "per month, at 3.00 USD/h, the average price of the A, B, C and 1 more team-b ran on (last 7 days)"
    )


def test_the_longest_basis_fits_the_column() -> None:
    models = tuple("M" * 200 + str(n) for n in range(9))
    basis = p.CostBasis(grant=True, price=p.Price(123456.78, p.Basis.RAN_ON, models, "USD", 7), named=True)
    assert len(p.to_text(basis)) <= 400  # requests.cost_basis is String(400)


def test_a_basis_the_version_before_stored_as_text_is_shown_as_stored() -> None:
    old = "for the grant, at 2.00 USD/h, the <A100> price this namespace ran on"
    assert p.from_text(old) == p.BasisAsStored(old)
    assert render_basis(p.from_text(old), "ns") == "for the grant, at 2.00 USD/h, the &lt;A100&gt; price this namespace ran on"


def test_an_idle_nudge_recorded_with_a_text_price_is_delivered_as_before() -> None:
    fields = {
        "namespace": "ns",
        "gpus": 2,
        "threshold_percent": 10.0,
        "window": timedelta(hours=4).total_seconds(),
        "highest": 0.05,
        "idle_hours": 8.0,
        "cost": 16.0,
        "currency": "USD",
        "price_basis": "at 2.00 USD/h, the default price",
    }
    said = from_json({"message": "IdleNudge", "fields": fields})
    assert isinstance(said, IdleNudge) and said.price_basis == p.BasisAsStored("at 2.00 USD/h, the default price")
    assert "16.00 USD (at 2.00 USD/h, the default price)." in render(said)
    assert from_json(to_json(said)) == said
    typed = IdleNudge("ns", 2, 10.0, timedelta(hours=4), 0.05, 8.0, 16.0, "USD", p.Price(2.0, p.Basis.DEFAULT, (), "USD", 7))
    assert from_json(to_json(typed)) == typed and "16.00 USD (at 2.00 USD/h, the default price)." in render(typed)
