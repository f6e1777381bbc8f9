"""ledger_entries.capacity_type and .pool: where each row's GPU-hours ran (spot, on-demand, a pool the policy
prices), so that a day keeps the price of each; ledger_days.split: whether the day could be told apart by node

Revision ID: 0017
Revises: 0018 (numbered before it, chained after it: the budget mail's 0018 landed first)
Create Date: 2026-12-05

One row per day x namespace x resource x GPU model x capacity type x pool: the unique constraint gains both.
Every row recorded before is on-demand in no pool (the one price it had), every day's split unknown.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0018"
branch_labels = None
depends_on = None

ON_DEMAND = "on-demand"
SUMMED = ("allocated_hours", "idle_hours", "observed_hours", "util_hours", "cost", "idle_cost")


def upgrade() -> None:
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("capacity_type", sa.String(length=16), nullable=False, server_default=ON_DEMAND))
        batch_op.add_column(sa.Column("pool", sa.String(length=63), nullable=False, server_default=""))
        batch_op.drop_constraint("uq_ledger_day_namespace_resource_model", type_="unique")
        batch_op.create_unique_constraint(
            "uq_ledger_day_namespace_resource_model_placement",
            ["day", "namespace", "resource", "model", "capacity_type", "pool"],
        )
    with op.batch_alter_table("ledger_days", schema=None) as batch_op:
        batch_op.add_column(sa.Column("split", sa.String(length=24), nullable=True))


def downgrade() -> None:
    """The older key has no placement: each day x namespace x resource x model's rows are folded into one (hours
    and money added, the price their cost over their hours), so no money is lost."""
    bind = op.get_bind()
    columns = ", ".join(SUMMED)
    rows = bind.execute(
        sa.text(f"SELECT id, day, namespace, resource, model, price, {columns} FROM ledger_entries ORDER BY id")
    ).all()
    kept: dict[tuple[object, ...], list[object]] = {}
    touched: set[tuple[object, ...]] = set()
    folded: list[int] = []
    for row in rows:
        key = (row.day, row.namespace, row.resource, row.model)
        if key not in kept:
            kept[key] = [row.id, row.price, *(getattr(row, name) for name in SUMMED)]
            continue
        into = kept[key]
        for index, name in enumerate(SUMMED, start=2):
            into[index] = float(into[index] or 0.0) + float(getattr(row, name) or 0.0)  # type: ignore[arg-type]
        folded.append(row.id)
        touched.add(key)
    for values in (kept[key] for key in touched):
        identifier, price, *sums = values
        hours, cost = float(sums[0] or 0.0), float(sums[4] or 0.0)  # type: ignore[arg-type]
        assignments = ", ".join(f"{name} = :{name}" for name in SUMMED)
        bind.execute(
            sa.text(f"UPDATE ledger_entries SET {assignments}, price = :price WHERE id = :id"),
            {"id": identifier, "price": cost / hours if hours else price, **dict(zip(SUMMED, sums, strict=True))},
        )
    for identifier in folded:
        bind.execute(sa.text("DELETE FROM ledger_entries WHERE id = :id"), {"id": identifier})
    with op.batch_alter_table("ledger_days", schema=None) as batch_op:
        batch_op.drop_column("split")
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_constraint("uq_ledger_day_namespace_resource_model_placement", type_="unique")
        batch_op.create_unique_constraint("uq_ledger_day_namespace_resource_model", ["day", "namespace", "resource", "model"])
        batch_op.drop_column("pool")
        batch_op.drop_column("capacity_type")
