"""``gpu-quota-bot shell`` as a person uses it, in real processes: line editing and history on a
terminal (a pty), ``kubectl get quota``, making GPUs idle and a workload blocked so the idle nudge and
the blocked-workload alert can be tried, the second sandbox cluster (us-2) taken down and brought back,
and no chart folders left behind."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

from tests.integration.processes import ROOT, bot_command, run_bot

US = "us-2/biz-model-serving-us"
APPLIED_IN_US = f"Applied: `requests.nvidia.com/gpu` in *{US}* (compute-quota)"


def shell(tmp_path: Path, *lines: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"TMPDIR": str(tmp_path)}
    env = {k: v for k, v in env.items() if not k.startswith(("PROMETHEUS_", "GPU_QUOTA", "DATABASE_URL", "SLACK_"))}
    result = run_bot("shell", env=env, stdin="\n".join([*lines, "quit"]), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result


def test_kubectl_get_quota_shows_the_quotas(tmp_path: Path) -> None:
    out = shell(tmp_path, "kubectl get quota", "kubectl get resourcequota -n biz-model-serving").stdout
    everything, one = out.split("kubectl get resourcequota -n biz-model-serving", 1)
    assert re.search(r"ai-frontier-research +compute-quota +nvidia.com/gpu +3/4 ", everything)
    assert re.search(r"biz-model-serving +compute-quota +nvidia.com/gpu +12/16 ", everything)
    assert re.search(r"ai-frontier-inference +compute-quota +nvidia.com/mig-1g.10gb +1/2 ", everything)
    assert re.search(r"ai-frontier-batch +clusterqueue/frontier-batch +nvidia.com/gpu \(a100\) +-/4 ", everything)
    assert re.search(r"biz-model-serving +compute-quota +nvidia.com/gpu +12/16 ", one) and "ai-frontier-research" not in one


def test_idle_gpus_get_a_nudge_and_a_blocked_workload_an_alert(tmp_path: Path) -> None:
    out = shell(tmp_path, "jobs", "idle ai-frontier-research", "block ai-frontier-research 3", "jobs").stdout
    before, after = out.split("idle ai-frontier-research", 1)
    assert "idle nudges: none; blocked workloads: 0" in before
    assert "*ai-frontier-research* holds" in after and "stayed under 5%" in after and "Snooze 24 h" in after
    assert "*ReplicaSet train-1-6d5f8b* in *ai-frontier-research* cannot start pods" in after
    assert "It asks for 3 GPUs while 3 of 4 are in use." in after and "Request more" in after
    assert "idle nudges: ai-frontier-research; blocked workloads: 1" in after


def test_a_workload_that_fits_is_not_blocked(tmp_path: Path) -> None:
    out = shell(tmp_path, "block ai-frontier-research 1", "jobs").stdout
    assert "1 GPU fits in ai-frontier-research (3 of 4 in use)" in out and "blocked workloads: 0" in out


def test_a_pod_waiting_for_free_gpus_is_not_blamed_on_the_quota(tmp_path: Path) -> None:
    out = shell(tmp_path, "/gpu-quota status ai-frontier-research", "wait ai-frontier-research 2", "jobs").stdout
    assert "running: 3 GPUs in 2 pods — 2 × low-priority-experiment, 1 × default" in out
    assert "1 GPU pod in *ai-frontier-research* waits for the scheduler, not the quota" in out
    assert "*sweep-1-0* (2 GPUs, low-priority-experiment): no free GPU, and no lower-priority pod to preempt" in out
    assert "blocked workloads: 1" in out and "Request more" not in out.split("wait ai-frontier-research 2", 1)[1]


def test_the_session_leaves_no_chart_folders_behind(tmp_path: Path) -> None:
    out = shell(tmp_path, "digest").stdout
    assert "gpu-cost-frontier-" in out and "saved to" in out  # the digest's chart was written during the session
    assert not list(tmp_path.glob("gpu-quota-*"))


def test_the_up_arrow_recalls_the_previous_line_on_a_terminal() -> None:
    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMETHEUS_", "GPU_QUOTA", "DATABASE_URL", "SLACK_"))}
    process = subprocess.Popen(
        bot_command("shell"), stdin=terminal, stdout=terminal, stderr=terminal, cwd=ROOT, env=env | {"TERM": "xterm"}
    )
    os.close(terminal)
    seen = b""

    def read_until(marker: bytes, count: int = 1, timeout: float = 90.0) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while seen.count(marker) < count:
            assert time.monotonic() < deadline, (
                f"waiting for {marker!r} x{count}; the terminal shows:\n{seen.decode(errors='replace')}"
            )
            ready, _, _ = select.select([controller], [], [], 1.0)
            if ready:
                try:
                    seen += os.read(controller, 4096)
                except OSError:  # the shell exited
                    break

    try:
        read_until(b"alice> ")
        os.write(controller, b"users\r")
        read_until(b"approver for Frontier research")
        read_until(b"alice> ", count=2)  # readline reads the terminal again (before that, the tty would echo ^[[A)
        os.write(controller, b"\x1b[A\r")  # Up arrow, Enter: the same command again
        read_until(b"approver for Frontier research", count=2)
        os.write(controller, b"quit\r")
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    assert b"Not a shell command" not in seen and b"^[[A" not in seen


def test_a_quota_lowered_below_usage_is_followed_until_jobs_finish(tmp_path: Path) -> None:
    out = shell(
        tmp_path,
        "as pat",
        "/gpu-quota request ai-frontier-research 1 permanent slow down frontier work",
        "as lee",
        "click 1",
        "y",
        "as dana",
        "click 1",
        "y",
        "as alice",
        "/gpu-quota status ai-frontier-research",
        "finish ai-frontier-research 1",
        "time +1d",
    ).stdout
    lowered, finished = out.split("finish ai-frontier-research 1", 1)
    assert "over quota by 2, reclaiming since" in lowered and "freed" not in lowered
    assert "2 GPUs freed over 1 day as jobs finished" in finished and "reclaimed: ai-frontier-research" in finished


def test_a_cluster_that_is_down_delays_only_its_own_change(tmp_path: Path) -> None:
    out = shell(
        tmp_path,
        "quota",
        "as bob",
        f"/gpu-quota request {US} +2 for 1d canary",
        "down us-2",
        "as maya",
        "click 1",
        "as bob",
        "/gpu-quota request biz-model-serving +2 for 1d peak",
        "as maya",
        "click 3",
        "quota",
        "up us-2",
        "time +1m",
        "quota",
    ).stdout
    before, down = out.split("> down us-2", 1)
    down, back = down.split("> up us-2", 1)
    assert re.search(r"biz-model-serving +compute-quota +nvidia.com/gpu +12/16 ", before)  # the home cluster, eu-1
    assert re.search(rf"{US} +compute-quota +nvidia.com/gpu +6/8 ", before)  # us-2's, by its key
    assert down.count("waiting for cluster us-2") == 1 and "You approved GQ-1; it is approved." in down
    assert "You approved GQ-2; it is applied." in down and APPLIED_IN_US not in down
    assert re.search(r"biz-model-serving +compute-quota +nvidia.com/gpu +12/18 +18 +GQ-2", down)
    assert re.search(rf"{US} +compute-quota +nvidia.com/gpu +6/8 ", down)
    assert back.count(APPLIED_IN_US) == 1 and "8 GPUs → *10 GPUs*" in back and "applies resumed: GQ-1" in back
    assert re.search(rf"{US} +compute-quota +nvidia.com/gpu +6/10 +10 +GQ-1", back)


def test_a_cluster_down_for_a_while_is_back_when_that_time_has_passed(tmp_path: Path) -> None:
    out = shell(
        tmp_path,
        "down ap-3",
        "down us-2 1h",
        "as bob",
        f"/gpu-quota request {US} +1 for 1d while us-2 is away",
        "time +1h",
        f"/gpu-quota request {US} +1 for 1d once it is back",
        "kubectl edit us-2/biz-model-serving-us 9",
        "kubectl get quota -n biz-model-serving-us",  # the bare name us-2 alone has
    ).stdout
    away, back = out.split("> time +1h", 1)
    assert "Usage (sandbox only): down <cluster> [duration], e.g. down us-2 1h; the clusters: eu-1, us-2" in away
    assert f"Could not read the quota of `{US}` from the cluster" in away and "Nothing was submitted" in away
    assert "Cluster us-2 answers again" in back and "GQ-1 submitted and posted in #biz-approvals" in back
    assert "resourcequota/compute-quota edited in us-2/biz-model-serving-us: GPUs set to 9 by hand." in back
    listed = back.rsplit("kubectl get quota -n biz-model-serving-us", 1)[1]
    assert re.search(rf"{US} +compute-quota +nvidia.com/gpu +6/9 +9 +\(by hand\)", listed) and "ai-frontier" not in listed
