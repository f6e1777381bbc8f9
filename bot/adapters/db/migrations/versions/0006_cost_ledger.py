"""cost ledger: one row per finished day x namespace x GPU model, and each day's status

Revision ID: 0006
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ledger_days",
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.Column("ksm_spacing", sa.Float(), nullable=True),
        sa.Column("dcgm_spacing", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("day"),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("team", sa.String(length=200), nullable=False),
        sa.Column("cost_center", sa.String(length=200), nullable=True),
        sa.Column("allocated_hours", sa.Float(), nullable=False),
        sa.Column("idle_hours", sa.Float(), nullable=False),
        sa.Column("observed_hours", sa.Float(), nullable=False),
        sa.Column("util_hours", sa.Float(), nullable=False),
        sa.Column("price", sa.Float(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("idle_cost", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("day", "namespace", "model", name="uq_ledger_day_namespace_model"),
    )
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ledger_entries_day"), ["day"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_entries_day"))
    op.drop_table("ledger_entries")
    op.drop_table("ledger_days")
