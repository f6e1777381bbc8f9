"""scheduled jobs: digests, budget alerts, spend, idle nudges, blocked alerts, outages

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blocked_alerts",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("alerted_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "budget_alerts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("team", sa.String(length=100), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("threshold", sa.String(length=10), nullable=False),
        sa.Column("percent", sa.Float(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("team", "month", "threshold", name="uq_budget_alert_once"),
    )
    op.create_table(
        "digest_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=100), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=False),
        sa.Column("posted_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("scope", "day", name="uq_digest_per_scope_day"),
    )
    op.create_table(
        "idle_nudges",
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("gpus", sa.Float(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("nudged_at", sa.DateTime(), nullable=True),
        sa.Column("snoozed_until", sa.DateTime(), nullable=True),
        sa.Column("snoozed_by", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("namespace"),
    )
    op.create_table(
        "metrics_outages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("cause", sa.Text(), nullable=False),
        sa.Column("notified_at", sa.DateTime(), nullable=True),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("metrics_outages", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_metrics_outages_ended_at"), ["ended_at"], unique=False)

    op.create_table(
        "team_spend",
        sa.Column("team", sa.String(length=100), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("spent", sa.Float(), nullable=False),
        sa.Column("budget", sa.Float(), nullable=False),
        sa.Column("forecast", sa.Float(), nullable=False),
        sa.Column("measured_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("team"),
    )


def downgrade() -> None:
    op.drop_table("team_spend")
    with op.batch_alter_table("metrics_outages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_metrics_outages_ended_at"))

    op.drop_table("metrics_outages")
    op.drop_table("idle_nudges")
    op.drop_table("digest_runs")
    op.drop_table("budget_alerts")
    op.drop_table("blocked_alerts")
