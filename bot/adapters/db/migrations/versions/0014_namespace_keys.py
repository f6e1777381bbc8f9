"""namespace columns hold namespace keys: cluster/name (two labels of at most 63 characters)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01

With several clusters a namespace is named ``cluster/name`` (``bot.domain.clusters``); the home
cluster's keep their bare names, so every row stored before means what it meant.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

COLUMNS = {
    "namespaces": ["name"],
    "requests": ["namespace", "source_namespace"],
    "grants": ["namespace"],
    "audit_events": ["namespace"],
    "idle_nudges": ["namespace"],
    "reclaims": ["namespace"],
    "blocked_alerts": ["namespace"],
    "ledger_entries": ["namespace"],
    "quota_block_days": ["namespace"],
}


def _resize(length: int, before: int) -> None:
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in columns:
                batch_op.alter_column(column, type_=sa.String(length=length), existing_type=sa.String(length=before))


def upgrade() -> None:
    _resize(127, 63)


def downgrade() -> None:
    _resize(63, 127)
