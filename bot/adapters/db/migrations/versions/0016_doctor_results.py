"""doctor_results: what the weekly doctor run found last, each check's status by its key, so that the admin
channel hears only of checks that changed to broken

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "doctor_results",
        sa.Column("check_key", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("check_key"),
    )


def downgrade() -> None:
    op.drop_table("doctor_results")
