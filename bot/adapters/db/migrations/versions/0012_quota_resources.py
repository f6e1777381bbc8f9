"""resource on namespaces, requests, grants and reclaims: a namespace's quota governs several GPU resources

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

One row of ``namespaces`` per namespace and governed resource (``nvidia.com/gpu``,
``nvidia.com/mig-3g.40gb``, ...); a request, its grant and a reclaim change or watch one resource.
Every row written before this revision was about whole NVIDIA GPUs, which is what the default says.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

GPU = "nvidia.com/gpu"


def _resource() -> sa.Column:
    return sa.Column("resource", sa.String(length=253), nullable=False, server_default=GPU)


def upgrade() -> None:
    for table in ("requests", "grants", "reclaims"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(_resource())
    op.add_column("namespaces", _resource())
    _primary_key(["name", "resource"])


def downgrade() -> None:
    # What the schema before cannot tell from whole GPUs goes: the other resources' rows.
    for table in ("namespaces", "reclaims", "grants"):
        op.execute(sa.text(f"DELETE FROM {table} WHERE resource != '{GPU}'"))
    op.execute(sa.text(f"DELETE FROM decisions WHERE request_id IN (SELECT id FROM requests WHERE resource != '{GPU}')"))
    op.execute(
        sa.text(
            f"UPDATE requests SET extends_request_id = NULL WHERE extends_request_id IN (SELECT id FROM requests WHERE resource != '{GPU}')"
        )
    )
    op.execute(sa.text(f"DELETE FROM requests WHERE resource != '{GPU}'"))
    _primary_key(["name"])
    with op.batch_alter_table("namespaces", schema=None) as batch_op:
        batch_op.drop_column("resource")
    for table in ("reclaims", "grants", "requests"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("resource")


def _namespaces(key: list[str]) -> sa.Table:
    """The namespaces table as it is in this revision, with its primary key on ``key``."""
    return sa.Table(
        "namespaces",
        sa.MetaData(),
        sa.Column("name", sa.String(length=63), nullable=False),
        _resource(),
        sa.Column("team", sa.String(length=100), nullable=False),
        sa.Column("base_gpus", sa.Integer(), nullable=False),
        sa.Column("last_seen_gpus", sa.Integer(), nullable=True),
        sa.Column("seen_resource_version", sa.String(length=64), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(*key, name="namespaces_pkey"),
    )


def _primary_key(columns: list[str]) -> None:
    """The namespaces table's primary key on ``columns``: SQLite copies the table into the new shape."""
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("namespaces", copy_from=_namespaces(columns), recreate="always"):
            pass
        return
    op.drop_constraint("namespaces_pkey", "namespaces", type_="primary")
    op.create_primary_key("namespaces_pkey", "namespaces", columns)
