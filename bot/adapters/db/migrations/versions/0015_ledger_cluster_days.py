"""ledger_days per cluster: a day is recorded (or found empty) for each cluster on its own, so a day one
cluster's Prometheus could not answer stays unknown for that cluster while the others' are recorded

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03

The key becomes (day, cluster); ``cluster`` is the namespace keys' cluster part, "" for the home cluster
(``bot.domain.clusters.HOME``): every day recorded before is the home cluster's, as every entry's bare
namespace name already says. The table is copied into its new shape (SQLite cannot change a key in place).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

COLUMNS = "day, status, recorded_at, ksm_spacing, dcgm_spacing"


def _days_table(name: str, *, per_cluster: bool) -> None:
    cluster = [sa.Column("cluster", sa.String(length=63), nullable=False, server_default="")] if per_cluster else []
    op.create_table(
        name,
        sa.Column("day", sa.Date(), nullable=False),
        *cluster,
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.Column("ksm_spacing", sa.Float(), nullable=True),
        sa.Column("dcgm_spacing", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("day", *(["cluster"] if per_cluster else [])),
    )


def upgrade() -> None:
    _days_table("ledger_days_new", per_cluster=True)
    op.execute(f"INSERT INTO ledger_days_new (cluster, {COLUMNS}) SELECT '', {COLUMNS} FROM ledger_days")
    op.drop_table("ledger_days")
    op.rename_table("ledger_days_new", "ledger_days")


def downgrade() -> None:
    # The older schema has one status per day: the home cluster's; the other clusters' entries go with theirs.
    _days_table("ledger_days_old", per_cluster=False)
    op.execute(f"INSERT INTO ledger_days_old ({COLUMNS}) SELECT {COLUMNS} FROM ledger_days WHERE cluster = ''")
    op.execute("DELETE FROM ledger_entries WHERE namespace LIKE '%/%'")
    op.drop_table("ledger_days")
    op.rename_table("ledger_days_old", "ledger_days")
