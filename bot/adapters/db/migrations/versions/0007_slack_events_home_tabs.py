"""slack events already handled, App Home tabs

Revision ID: 0007
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_events",
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("event_id"),
    )
    op.create_index(op.f("ix_slack_events_received_at"), "slack_events", ["received_at"], unique=False)
    op.create_table(
        "home_tabs",
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("published_at", sa.DateTime(), nullable=False),
        sa.Column("last_audit_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("user_id"),
    )


def downgrade() -> None:
    op.drop_table("home_tabs")
    op.drop_index(op.f("ix_slack_events_received_at"), table_name="slack_events")
    op.drop_table("slack_events")
