"""The pytest markers tell the truth about what the marked tests need."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_postgres_marker_names_the_variable_the_fixture_reads() -> None:
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    postgres = next(m for m in markers if m.startswith("postgres:"))
    conftest = (ROOT / "tests" / "integration" / "conftest.py").read_text()
    variable, default = re.findall(r'POSTGRES_ADMIN_URL = os\.environ\.get\("(\w+)", "([^"]+)"\)', conftest)[0]
    assert variable in postgres and default in postgres, postgres
