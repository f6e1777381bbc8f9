"""requests.cost_basis holds the price's basis ("per month, at 4.80 USD/h, the H100 price this namespace
ran on"): widened from 32 to 400 characters; ledger entries indexed by namespace and day (the pricer's
read of the models a namespace ran on over the last days)

Revision ID: 0010
Revises: 0008 (merged after the shifts)
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.alter_column(
            "cost_basis", existing_type=sa.String(length=32), type_=sa.String(length=400), existing_nullable=True
        )
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.create_index("ix_ledger_entries_namespace_day", ["namespace", "day"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_ledger_entries_namespace_day")
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.alter_column(
            "cost_basis", existing_type=sa.String(length=400), type_=sa.String(length=32), existing_nullable=True
        )
