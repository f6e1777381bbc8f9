"""Persistence: SQLAlchemy 2.0 models, the engine, a unit of work, and Alembic migrations."""
