"""reclaims (a quota lowered below usage, followed until usage is within it) and quota blocks per day

Revision ID: 0009
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reclaims",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=True),
        sa.Column("quota", sa.Integer(), nullable=False),
        sa.Column("used_at_start", sa.Integer(), nullable=False),
        sa.Column("used_at_end", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("reclaims", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_reclaims_namespace"), ["namespace"], unique=False)
        batch_op.create_index(batch_op.f("ix_reclaims_finished_at"), ["finished_at"], unique=False)
    op.create_table(
        "quota_block_days",
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("blocked", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "day"),
    )


def downgrade() -> None:
    op.drop_table("quota_block_days")
    with op.batch_alter_table("reclaims", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_reclaims_finished_at"))
        batch_op.drop_index(batch_op.f("ix_reclaims_namespace"))
    op.drop_table("reclaims")
