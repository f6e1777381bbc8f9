"""Every CLI problem is one line on stderr and an exit code, never a traceback (real processes)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.processes import ROOT, SANDBOX_POLICY, bot_command, run_bot, run_env

CORRUPT_KUBECONFIGS = {
    "bad-yaml": "garbage: [\n",
    "a-list": "- a\n- b\n",
    "wrong-shape": "clusters: 5\ncurrent-context: x\n",
    "bad-base64": (
        "apiVersion: v1\nkind: Config\n"
        'clusters: [{name: c, cluster: {server: "https://x", certificate-authority-data: "!!notbase64"}}]\n'
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    ),
}
BAD_DATABASE_URLS = {
    "not-a-url": "this is not a url",
    "unknown-kind": "nonsense://host/db",
    "unreachable": "postgresql://gq:s3cret-pw@127.0.0.1:1/gq",
    "missing-directory": "sqlite:////nonexistent-dir/bot.db",
}


def one_line_failure(result: subprocess.CompletedProcess[str], *, code: int = 2) -> str:
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def corrupt(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"kubeconfig-{kind}"
    path.write_text(CORRUPT_KUBECONFIGS[kind])
    return path


def test_shell_with_a_missing_kubeconfig() -> None:
    line = one_line_failure(run_bot("shell", "--kubeconfig", "/nonexistent", stdin="quit\n"))
    assert line == "gpu-quota-bot: --kubeconfig /nonexistent: no such file"


@pytest.mark.parametrize("kind", sorted(CORRUPT_KUBECONFIGS))
def test_shell_with_a_corrupt_kubeconfig(tmp_path: Path, kind: str) -> None:
    path = corrupt(tmp_path, kind)
    line = one_line_failure(run_bot("shell", "--kubeconfig", str(path), stdin="quit\n"))
    assert line.startswith("gpu-quota-bot: --kubeconfig: cannot load the Kubernetes configuration") and str(path) in line


@pytest.mark.parametrize("name", sorted(BAD_DATABASE_URLS))
@pytest.mark.parametrize("action", ["upgrade", "current"])
def test_db_with_a_bad_database_url(tmp_path: Path, name: str, action: str) -> None:
    env = run_env(tmp_path, _Fake(), _Fake(), DATABASE_URL=BAD_DATABASE_URLS[name])
    line = one_line_failure(run_bot("db", action, env=env))
    assert line.startswith("gpu-quota-bot: DATABASE_URL")
    assert "s3cret-pw" not in line


def test_shell_with_a_bad_database() -> None:
    line = one_line_failure(run_bot("shell", "--database", "nonsense://x", stdin="quit\n"))
    assert line.startswith("gpu-quota-bot: --database: unknown kind of database 'nonsense'")


def test_check_config_reports_a_bad_database_url_and_kubeconfig(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    env = run_env(
        tmp_path, slack, kube, DATABASE_URL=BAD_DATABASE_URLS["unreachable"], KUBECONFIG=str(corrupt(tmp_path, "bad-yaml"))
    )
    result = run_bot("check-config", env=env)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == 1
    problems = result.stderr.strip().splitlines()
    assert len(problems) == 2, result.stderr
    assert problems[0].startswith("problem: DATABASE_URL: cannot reach the database postgresql+psycopg://gq:***@127.0.0.1:1/gq")
    assert problems[1].startswith("problem: KUBECONFIG: cannot load the Kubernetes configuration")
    assert "s3cret-pw" not in result.stderr + result.stdout


def test_check_config_refuses_a_cron_apscheduler_cannot_run(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    policy = tmp_path / "policy.yaml"
    policy.write_text(SANDBOX_POLICY.read_text() + "\nschedules:\n  digest: '99 * * * *'\n")
    result = run_bot("check-config", env=run_env(tmp_path, slack, kube, GPU_QUOTA_CONFIG=str(policy)))
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"problem: {policy}: schedules.digest: ") and "'99 * * * *' is not a valid cron expression" in line


@pytest.mark.parametrize("setting", ["DATABASE_URL", "KUBECONFIG"])
def test_run_with_a_bad_database_url_or_kubeconfig(tmp_path: Path, stand_ins: tuple, setting: str) -> None:
    slack, kube = stand_ins
    bad = BAD_DATABASE_URLS["unknown-kind"] if setting == "DATABASE_URL" else str(corrupt(tmp_path, "a-list"))
    result = subprocess.run(
        bot_command("run"),
        env=run_env(tmp_path, slack, kube, **{setting: bad}),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    line = one_line_failure(result)
    assert setting in line


class _Fake:
    """Stands in for the Slack and Kubernetes stand-ins where a command never reaches them."""

    api_url = "http://127.0.0.1:9/api/"

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text("")
        return path
