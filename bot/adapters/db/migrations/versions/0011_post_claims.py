"""requests.post_claimed_until / copy_claimed_until: who may post a request's card (and a shift's copy)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

Nobody posts the card before this time: a poster holds it while its ``chat.postMessage`` is in flight,
or Slack asked to wait (429 Retry-After). A claim is taken with a conditional UPDATE (card not posted,
claim free or lapsed), so one card is posted across replicas.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.add_column(sa.Column("post_claimed_until", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("copy_claimed_until", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.drop_column("copy_claimed_until")
        batch_op.drop_column("post_claimed_until")
