"""apply lease and attempts, the before -> after actually applied, the adopted resourceVersion

Revision ID: 0003
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.add_column(sa.Column("apply_lease_until", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("apply_attempts", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("applied_from", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("applied_to", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_requests_apply_lease_until"), ["apply_lease_until"], unique=False)
    with op.batch_alter_table("namespaces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("seen_resource_version", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("namespaces", schema=None) as batch_op:
        batch_op.drop_column("seen_resource_version")
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_requests_apply_lease_until"))
        batch_op.drop_column("applied_to")
        batch_op.drop_column("applied_from")
        batch_op.drop_column("apply_attempts")
        batch_op.drop_column("apply_lease_until")
