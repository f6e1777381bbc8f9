"""requests: the source leg of a shift (GPUs moved from one namespace to another in one request)

Revision ID: 0008
Revises: 0009 (merged after the reclaims)
Create Date: 2026-12-01

A shift is one request row (kind 'shift') whose ``namespace``/``team`` are the target; the source
side is ``source_namespace``/``source_team``, its state (recorded -> applied -> returned), the
source quota before -> after the bot actually made, the source's GPUs in use when it was asked, and
where the copy of its card for the source team is (channel and ts; none when one card serves both).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_namespace", sa.String(length=63), nullable=True))
        batch_op.add_column(sa.Column("source_team", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("source_state", sa.String(length=10), nullable=True))
        batch_op.add_column(sa.Column("source_from", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("source_to", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("source_used", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("source_channel_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("source_message_ts", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("requests", schema=None) as batch_op:
        for column in (
            "source_message_ts",
            "source_channel_id",
            "source_used",
            "source_to",
            "source_from",
            "source_state",
            "source_team",
            "source_namespace",
        ):
            batch_op.drop_column(column)
