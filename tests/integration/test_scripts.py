"""The README's two commands on a bare machine: ``scripts/test`` installs Debian packages without their
recommended extras and brings up a PostgreSQL where none is installed; ``scripts/try`` installs the
package only when pyproject.toml changed.

The PostgreSQL steps run the script's own function (``source scripts/test; postgres_server``) in real
bash with a PATH that holds the ordinary tools but no PostgreSQL, and stand-in ``apt-get``,
``pg_ctlcluster`` and ``pg_isready`` commands that behave like Debian's (the package creates the
cluster's configuration and the two commands; the server answers once started) and log each call.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
TOOLS = [
    "bash",
    "cat",
    "dirname",
    "env",
    "grep",
    "id",
    "ls",
    "mkdir",
    "seq",
    "sed",
    "sleep",
    "sort",
    "tail",
    "touch",
    "chmod",
    "cp",
]
DEBIAN_HBA = "local all postgres peer\nhost all all 127.0.0.1/32 scram-sha-256\n"


def test_debian_packages_are_installed_without_recommends() -> None:
    for script in (ROOT / "scripts").iterdir():
        for line in script.read_text().splitlines():
            if re.search(r"apt-get (-\S+ )*install", line):
                assert "--no-install-recommends" in line, f"{script.name}: {line.strip()}"
    assert "apt_install prometheus" in (ROOT / "scripts" / "test").read_text()
    assert "apt_install postgresql" in (ROOT / "scripts" / "test").read_text()


def test_ci_calls_exactly_the_readme_test_command() -> None:
    lines = [
        line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert lines == ["./scripts/test"]


class BareMachine:
    """A PATH with the ordinary tools and Debian stand-ins; ``log`` lists every stand-in call."""

    def __init__(self, tmp_path: Path) -> None:
        self.bin = tmp_path / "bin"
        self.package = tmp_path / "postgresql-package"  # what the stand-in apt-get "installs"
        self.etc = tmp_path / "etc-postgresql"
        self.state = tmp_path / "state"
        self.log = tmp_path / "calls.log"
        for folder in (self.bin, self.package, self.state):
            folder.mkdir()
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, tool
            (self.bin / tool).symlink_to(found)
        self.log.touch()
        (self.package / "pg_hba.conf").write_text(DEBIAN_HBA)
        self._command(self.package / "pg_isready", f"[ -e {self.state}/running ]")
        running = f"{self.state}/running"
        self._command(
            self.package / "pg_ctlcluster",
            f'case " $* " in *" start "*) touch {running} ;; *" status "*) [ -e {running} ] ;; esac',
        )
        # Debian's package: the cluster's configuration, and the two commands.
        self._command(
            self.bin / "apt-get",
            f'if [[ " $* " == *" install "* && " $* " == *" postgresql "* ]]; then\n'
            f"  mkdir -p {self.etc}/15/main && cp {self.package}/pg_hba.conf {self.etc}/15/main/\n"
            f"  cp {self.package}/pg_isready {self.package}/pg_ctlcluster {self.bin}/\n"
            "fi",
        )

    def _command(self, path: Path, body: str) -> None:
        path.write_text(f'#!{shutil.which("bash")}\necho "{path.name} $*" >> {self.log}\n{body}\n')
        path.chmod(0o755)

    def installed_but_stopped(self) -> None:
        (self.etc / "15" / "main").mkdir(parents=True)
        (self.etc / "15" / "main" / "pg_hba.conf").write_text("host all all 127.0.0.1/32 trust\n")
        for name in ("pg_isready", "pg_ctlcluster"):
            shutil.copy(self.package / name, self.bin / name)

    def run(self, function: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": str(self.bin), "PG_ETC": str(self.etc), "HOME": os.environ.get("HOME", "/tmp")}
        return subprocess.run(
            [str(self.bin / "bash"), "-c", f"source {ROOT / 'scripts' / 'test'} && {function}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


@pytest.fixture
def machine(tmp_path: Path) -> BareMachine:
    if os.geteuid() != 0:
        pytest.skip("the script runs apt-get as root (sudo otherwise); this check runs as root")
    return BareMachine(tmp_path)


def test_a_machine_without_postgresql_gets_it_installed_started_and_open_to_the_tests(machine: BareMachine) -> None:
    result = machine.run("postgres_server")
    assert result.returncode == 0, result.stderr
    calls = machine.calls()
    assert calls[:2] == ["apt-get update -qq", "apt-get install -y -qq --no-install-recommends postgresql"]
    assert "pg_ctlcluster --skip-systemctl-redirect 15 main start" in calls
    assert calls[-1] == "pg_isready -q -h 127.0.0.1 -p 5432"
    hba = (machine.etc / "15" / "main" / "pg_hba.conf").read_text()
    assert hba.splitlines()[0] == "host all postgres 127.0.0.1/32 trust"  # read top-down: this line decides
    assert hba.endswith(DEBIAN_HBA)


def test_an_installed_but_stopped_postgresql_is_started_without_installing(machine: BareMachine) -> None:
    machine.installed_but_stopped()
    result = machine.run("postgres_server")
    assert result.returncode == 0, result.stderr
    assert not [c for c in machine.calls() if c.startswith("apt-get")]
    assert "pg_ctlcluster --skip-systemctl-redirect 15 main start" in machine.calls()
    assert (machine.etc / "15" / "main" / "pg_hba.conf").read_text() == "host all all 127.0.0.1/32 trust\n"  # left alone


def test_a_running_postgresql_is_left_alone(machine: BareMachine) -> None:
    machine.installed_but_stopped()
    (machine.state / "running").touch()
    result = machine.run("postgres_server")
    assert result.returncode == 0, result.stderr
    assert machine.calls() == ["pg_isready -q -h 127.0.0.1 -p 5432"]


def test_try_installs_the_package_only_when_pyproject_changed(tmp_path: Path) -> None:
    """scripts/try in a copy of the project whose .venv commands log their calls."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "try", tmp_path / "scripts" / "try")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    venv, log = tmp_path / ".venv" / "bin", tmp_path / "calls.log"
    venv.mkdir(parents=True)
    bash = shutil.which("bash")
    for name in ("python", "gpu-quota-bot"):
        (venv / name).write_text(f'#!{bash}\necho "{name} $* PYTHONWARNINGS=${{PYTHONWARNINGS:-}}" >> {log}\n')
        (venv / name).chmod(0o755)

    def run() -> list[str]:
        log.write_text("")
        result = subprocess.run([str(tmp_path / "scripts" / "try"), "--demo"], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return log.read_text().splitlines()

    install = "python -m pip install --quiet --disable-pip-version-check -e . PYTHONWARNINGS=ignore:Editable installation"
    assert run() == [install, "gpu-quota-bot shell --demo PYTHONWARNINGS="]
    assert run() == ["gpu-quota-bot shell --demo PYTHONWARNINGS="]  # nothing changed: no reinstall
    with (tmp_path / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# a new dependency, say\n")
    assert run() == [install, "gpu-quota-bot shell --demo PYTHONWARNINGS="]
