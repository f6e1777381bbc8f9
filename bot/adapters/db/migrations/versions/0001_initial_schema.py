"""initial schema: requests, decisions, grants, namespaces, audit trail

Revision ID: 0001
Revises:
Create Date: 2026-11-30

Times are stored as UTC without a zone (bot.adapters.db.models.UTCDateTime).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("namespace", sa.String(length=63), nullable=True),
        sa.Column("request_id", sa.Integer(), nullable=True),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_events_at"), ["at"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_events_namespace"), ["namespace"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_events_request_id"), ["request_id"], unique=False)

    op.create_table(
        "namespaces",
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("team", sa.String(length=100), nullable=False),
        sa.Column("base_gpus", sa.Integer(), nullable=False),
        sa.Column("last_seen_gpus", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "requests",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("team", sa.String(length=100), nullable=False),
        sa.Column("requester_id", sa.String(length=32), nullable=False),
        sa.Column("amount_text", sa.String(length=16), nullable=False),
        sa.Column("delta", sa.Integer(), nullable=False),
        sa.Column("duration_seconds", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("approvals_required", sa.Integer(), nullable=False),
        sa.Column("auto_approved", sa.Boolean(), nullable=False),
        sa.Column("hard_before", sa.Integer(), nullable=False),
        sa.Column("used_before", sa.Integer(), nullable=True),
        sa.Column("allocatable", sa.Integer(), nullable=True),
        sa.Column("committed_after", sa.Integer(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("cost_basis", sa.String(length=32), nullable=True),
        sa.Column("channel_id", sa.String(length=32), nullable=False),
        sa.Column("message_ts", sa.String(length=32), nullable=True),
        sa.Column("extends_request_id", sa.Integer(), nullable=True),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("decide_by", sa.DateTime(), nullable=False),
        sa.Column("decided_at", sa.DateTime(), nullable=True),
        sa.Column("applied_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["extends_request_id"],
            ["requests.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_requests_decide_by"), ["decide_by"], unique=False)
        batch_op.create_index(batch_op.f("ix_requests_namespace"), ["namespace"], unique=False)
        batch_op.create_index(batch_op.f("ix_requests_requester_id"), ["requester_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_requests_state"), ["state"], unique=False)

    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("verdict", sa.String(length=10), nullable=False),
        sa.Column("decided_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("request_id", "user_id", name="uq_decision_per_user"),
    )
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_decisions_request_id"), ["request_id"], unique=False)

    op.create_table(
        "grants",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=False),
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=10), nullable=False),
        sa.Column("starts_at", sa.DateTime(), nullable=False),
        sa.Column("ends_at", sa.DateTime(), nullable=False),
        sa.Column("reminded_at", sa.DateTime(), nullable=True),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("end_reason", sa.String(length=20), nullable=True),
        sa.Column("ended_by", sa.String(length=32), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("request_id"),
    )
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_grants_ends_at"), ["ends_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_grants_namespace"), ["namespace"], unique=False)
        batch_op.create_index(batch_op.f("ix_grants_state"), ["state"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grants_state"))
        batch_op.drop_index(batch_op.f("ix_grants_namespace"))
        batch_op.drop_index(batch_op.f("ix_grants_ends_at"))

    op.drop_table("grants")
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_decisions_request_id"))

    op.drop_table("decisions")
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_requests_state"))
        batch_op.drop_index(batch_op.f("ix_requests_requester_id"))
        batch_op.drop_index(batch_op.f("ix_requests_namespace"))
        batch_op.drop_index(batch_op.f("ix_requests_decide_by"))

    op.drop_table("requests")
    op.drop_table("namespaces")
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_events_request_id"))
        batch_op.drop_index(batch_op.f("ix_audit_events_namespace"))
        batch_op.drop_index(batch_op.f("ix_audit_events_at"))

    op.drop_table("audit_events")
