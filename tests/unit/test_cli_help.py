"""Each command's --help lists the settings (environment variables) it reads."""

from __future__ import annotations

import inspect
import re

import pytest

from bot import bootstrap, check_config
from bot.cli import main
from bot.settings import Settings


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def read_by(*functions: object) -> set[str]:
    """The settings the functions' source reads (``settings.x``), as environment variable names."""
    fields = {name for function in functions for name in re.findall(r"settings\.(\w+)", inspect.getsource(function))}  # type: ignore[arg-type]
    return {name.upper() for name in fields if name in Settings.model_fields}


def test_run_help_lists_every_setting(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of("run", capsys)
    missing = {name.upper() for name in Settings.model_fields} - set(re.findall(r"^  ([A-Z_]+) ", text, flags=re.MULTILINE))
    assert not missing, text


def test_check_config_help_lists_the_settings_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of("check-config", capsys)
    needed = read_by(check_config, bootstrap.connect_metrics, bootstrap.connect_prometheus) | read_by(Settings.runtime_problems)
    assert needed >= {
        "GPU_QUOTA_CONFIG",
        "KUBECONFIG",
        "SLACK_BOT_TOKEN",
        "PROMETHEUS_URL",
        "PROMETHEUS_CA_BUNDLE",
        "DATABASE_URL",
    }
    listed = set(re.findall(r"^  ([A-Z_]+) ", text, flags=re.MULTILINE))
    assert needed <= listed, text


def test_db_help_lists_the_database_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert re.search(r"^  DATABASE_URL ", help_of("db", capsys), flags=re.MULTILINE)
