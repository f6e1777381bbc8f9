"""The start-up checks every subcommand shares: the database answers, the cluster's configuration loads.

A problem a person can fix is a ``SettingsProblem`` naming the setting, shown as one line (never a
traceback, never a secret of a URL). Heavy libraries are imported inside the checks, so that
``--help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import GpuQuotaError

if TYPE_CHECKING:
    from bot.adapters.kube import KubernetesCluster


class SettingsProblem(Exception):
    """A setting the command needs is wrong; the message names it."""


def check_database(url: str, *, setting: str = "DATABASE_URL") -> None:
    """Raise SettingsProblem (naming ``setting``) unless ``url`` parses and the database answers."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

    from bot.adapters.db.database import create_db_engine, normalize_database_url

    usage = "use postgresql://USER@HOST:5432/DB or sqlite:///PATH"
    try:
        parsed = make_url(normalize_database_url(url))
    except (ArgumentError, ValueError):
        raise SettingsProblem(f"{setting} is not a database URL: {usage}") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        _check_sqlite_file(Path(parsed.database), setting)
        return
    try:
        engine = create_db_engine(url)
    except NoSuchModuleError:
        raise SettingsProblem(f"{setting}: unknown kind of database '{parsed.drivername}': {usage}") from None
    except (ArgumentError, ValueError, TypeError) as error:
        raise SettingsProblem(f"{setting} is not a usable database URL ({type(error).__name__}): {usage}") from None
    except ImportError as error:
        raise SettingsProblem(f"{setting}: the driver for '{parsed.drivername}' is not installed ({error.name})") from None
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as error:
        cause = error.orig if isinstance(error, DBAPIError) else error
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        shown = parsed.render_as_string(hide_password=True)
        raise SettingsProblem(f"{setting}: cannot reach the database {shown}: {reason}") from None
    finally:
        engine.dispose()


def _check_sqlite_file(path: Path, setting: str) -> None:
    """A SQLite file that exists, or a directory it can be created in (without creating it: check-config reads only)."""
    import os

    if path.exists():
        if not path.is_file() or not os.access(path, os.R_OK | os.W_OK):
            raise SettingsProblem(f"{setting}: {path} is not a readable and writable SQLite file")
        return
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        raise SettingsProblem(f"{setting}: cannot create {path}: the directory {path.parent} does not exist or is not writable")


def load_cluster(
    kubeconfig: Path | None,
    *,
    setting: str = "KUBECONFIG",
    context: str | None = None,
    timeout: tuple[float, float] = (5.0, 20.0),
) -> KubernetesCluster:
    """The cluster client, or SettingsProblem naming ``setting`` when the configuration is missing or corrupt."""
    from bot.bootstrap import connect_cluster

    if kubeconfig is not None and not kubeconfig.is_file():
        raise SettingsProblem(f"{setting} {kubeconfig}: no such file")
    try:
        return connect_cluster(kubeconfig, context=context, timeout=timeout)
    except GpuQuotaError as error:
        raise SettingsProblem(f"{setting}: {error}") from None
