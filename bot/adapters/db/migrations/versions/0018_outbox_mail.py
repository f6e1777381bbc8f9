"""outbox: mail entries, whose target is a whole mail address and whose stream is "mail:" and the address

Revision ID: 0018
Revises: 0016
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Widening a varchar is a change of the catalog only on PostgreSQL (no rewrite, no long lock); SQLite
    # enforces no length, and its batch copy keeps every row.
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.alter_column("stream", existing_type=sa.String(length=120), type_=sa.String(length=262), existing_nullable=False)
        batch_op.alter_column("target", existing_type=sa.String(length=64), type_=sa.String(length=254), existing_nullable=True)


def downgrade() -> None:
    # The version before knows no mail: its entries go (they would not fit, and it could not send them).
    op.execute(sa.text("DELETE FROM outbox WHERE kind = 'mail'"))
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.alter_column("target", existing_type=sa.String(length=254), type_=sa.String(length=64), existing_nullable=True)
        batch_op.alter_column("stream", existing_type=sa.String(length=262), type_=sa.String(length=120), existing_nullable=False)
