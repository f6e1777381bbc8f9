"""ledger_entries.resource: the extended resource of each row (whole GPUs, a MIG profile, amd.com/gpu...), so
that a day keeps the price of each resource it was recorded at; the rows recorded before are whole GPUs

Revision ID: 0013
Revises: 0011 (to be chained after 0012)
Create Date: 2026-12-02

One row per day x namespace x resource x GPU model: the unique constraint gains the resource (a
namespace may run whole A100s and MIG slices of A100s on the same day).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

GPU = "nvidia.com/gpu"  # what every row recorded before this revision counted


def upgrade() -> None:
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resource", sa.String(length=253), nullable=False, server_default=GPU))
        batch_op.drop_constraint("uq_ledger_day_namespace_model", type_="unique")
        batch_op.create_unique_constraint("uq_ledger_day_namespace_resource_model", ["day", "namespace", "resource", "model"])


def downgrade() -> None:
    # Rows of other resources have no place in the older schema (its key has no resource): they go.
    op.execute(sa.text("DELETE FROM ledger_entries WHERE resource != :gpu").bindparams(gpu=GPU))
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_constraint("uq_ledger_day_namespace_resource_model", type_="unique")
        batch_op.create_unique_constraint("uq_ledger_day_namespace_model", ["day", "namespace", "model"])
        batch_op.drop_column("resource")
