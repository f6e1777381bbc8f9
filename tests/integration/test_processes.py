"""The console script as a person or a cluster runs it: ``shell --demo`` and ``run`` in real processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import requests

from bot.sandbox.session import BOT_TOKEN, SIGNING_SECRET
from bot.sandbox.slack_client import SlackSide
from tests.integration.processes import ROOT, bot_command, metric, run_bot, run_env, wait_for, wait_until_ready


def test_shell_demo_tells_the_whole_story() -> None:
    result = run_bot("shell", "--demo", timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "SANDBOX" in out and "no real cluster" in out
    assert "GQ-1 submitted and posted in #frontier-approvals" in out
    assert "Approved by @lee — 1 of 1." in out
    assert "4 GPUs → *8 GPUs*" in out
    assert "The grant expired: *ai-frontier-research* 8 GPUs → *4 GPUs*." in out
    assert "Approved by @lee — 2 of 2." in out and "Running pods keep running" in out
    assert "Shift applied, source first: *ai-frontier-research* 4 GPUs → *1 GPU* (gave up 3 GPUs)" in out
    assert "*biz-model-serving* 16 GPUs → *19 GPUs*" in out and "shift_source_applied" in out
    assert "over quota by 2, reclaiming since" in out  # frontier's jobs still hold 3 GPUs
    assert "*2 GPUs freed over 2 days as jobs finished* in *ai-frontier-research*" in out  # then the reclaim ends
    assert "quota_patched" in out and "reclaim_ended" in out  # the audit trail
    # The second cluster: us-2 down delays only its own change, which is applied once it is back.
    assert "GQ-5 is applied: *us-2/biz-model-serving-us* now has 10 GPUs" in out
    down, back = out.split("> down us-2", 1)[1].split("> up us-2", 1)
    assert down.count("waiting for cluster us-2") == 1 and "You approved GQ-6; it is approved." in down
    assert "GQ-7 is applied: *biz-model-serving* now has 21 GPUs" in down and "GQ-6 is applied" not in down
    assert "GQ-6 is applied: *us-2/biz-model-serving-us* now has 12 GPUs" in back and "applies resumed: GQ-6" in back
    assert re.search(r"us-2/biz-model-serving-us +compute-quota +nvidia.com/gpu +6/12 +12 +GQ-6", back)
    assert "Traceback" not in out + result.stderr


def test_shell_reads_typed_lines_and_fills_forms() -> None:
    typed = "\n".join(
        [
            "/gpu-quota request ai-frontier-research +2",  # incomplete: the form opens
            "",  # namespace: keep
            "",  # GPUs: keep +2
            "temporary",  # temporary or permanent: no default
            "12h",  # duration
            "evaluation sweep",  # reason
            "as lee",
            "click 1",
            "quota",
            "quit",
        ]
    )
    result = run_bot("shell", stdin=typed, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "GQ-1 submitted" in result.stdout
    assert re.search(r"ai-frontier-research +compute-quota +nvidia.com/gpu +3/6 ", result.stdout)


def test_run_serves_slack_over_http_and_stops_cleanly(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    env = run_env(tmp_path, slack, kube)
    base = f"http://127.0.0.1:{env['PORT']}"
    process = subprocess.Popen(bot_command("run"), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_ready(base, process)
        side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("r"), names={})
        body = side.slash_command(user_id="U0ALICE", text="request ai-frontier-research +4 for 3d fine-tune")
        assert requests.post(f"{base}/slack/events", data=body, headers=side.sign(body), timeout=10).status_code == 200
        message = wait_for(
            lambda: next((r for r in slack.records if r.kind == "message" and r.channel == "C0FRONTIER"), None),
            what="the request message",
        )
        click = side.block_action(
            user_id="U0LEE", action_id="gq_approve", value="1", channel_id=message.channel, message_ts=message.ts
        )
        assert requests.post(f"{base}/slack/events", data=click, headers=side.sign(click), timeout=10).status_code == 200
        wait_for(lambda: kube.hard("ai-frontier-research", "compute-quota") == "8", what="the quota patch")
        forged = dict(side.sign(click), **{"x-slack-signature": "v0=" + "1" * 64})
        assert requests.post(f"{base}/slack/events", data=click, headers=forged, timeout=10).status_code == 401
        wait_for(lambda: metric(base, "gpu_quota_applies_total", outcome="applied") == 1.0, what="the apply in /metrics")
        assert metric(base, "gpu_quota_requests", state="applied") == 1.0
        assert metric(base, "gpu_quota_requests", state="pending") == 0.0
        assert metric(base, "gpu_quota_decisions_total", verdict="approve") == 1.0
        assert metric(base, "gpu_quota_apply_seconds_count") == 1.0
        assert metric(base, "gpu_quota_leader") == 1.0  # SQLite: the only replica leads
        assert metric(base, "gpu_quota_errors_total", system="kubernetes", kind="permanent") is None
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(line["message"] == "stopped" for line in lines)
    request_lines = [line for line in lines if line.get("request_id") == "GQ-1"]
    assert any("submitted by U0ALICE" in line["message"] for line in request_lines)  # the request id on its log lines
    assert any("bad or stale signature" in line["message"] for line in lines)
    assert BOT_TOKEN not in out + err and SIGNING_SECRET not in out + err


def test_run_names_every_missing_setting(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GPU_QUOTA"))}
    result = run_bot("run", env=env)
    assert result.returncode == 2
    for setting in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "GPU_QUOTA_CONFIG"):
        assert setting in result.stderr


def test_run_refuses_a_rejected_token_without_printing_it(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    wrong = "xoxb-wrong-token-123"
    result = run_bot("run", env=run_env(tmp_path, slack, kube, SLACK_BOT_TOKEN=wrong))
    assert result.returncode == 2
    assert "SLACK_BOT_TOKEN" in result.stderr and "invalid_auth" in result.stderr
    assert wrong not in result.stderr + result.stdout


def test_run_refuses_a_broken_policy_file(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    policy = tmp_path / "policy.yaml"
    policy.write_text("teams:\n  t:\n    channel: C1\n    namespaces: [Bad_Name]\n    approvers: {users: [U1]}\n")
    result = run_bot("run", env=run_env(tmp_path, slack, kube, GPU_QUOTA_CONFIG=str(policy)))
    assert result.returncode == 2
    assert "teams.t.namespaces.0.name" in result.stderr and "not a valid Kubernetes namespace name" in result.stderr


def test_invalid_setting_values_are_named(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    result = run_bot("run", env=run_env(tmp_path, slack, kube, PORT="not-a-port"))
    assert result.returncode == 2 and "PORT" in result.stderr


def test_digest_print_works_on_a_fresh_machine(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GPU_QUOTA", "PROMETHEUS", "DATABASE_URL"))}
    result = run_bot("digest", "--print", "--date", "2026-11-20", "--chart-dir", str(tmp_path), env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "SANDBOX metrics" in result.stdout
    assert "GPU cost digest · Frontier research · Nov 20, 2026" in result.stdout
    assert "GPU cost summary · Nov 20, 2026" in result.stdout
    charts = sorted(p.name for p in tmp_path.glob("*.png"))
    assert charts == ["gpu-cost-business-2026-11-20.png", "gpu-cost-frontier-2026-11-20.png", "gpu-cost-org-2026-11-20.png"]
    assert all((tmp_path / name).read_bytes().startswith(b"\x89PNG") for name in charts)


def test_check_config_names_every_problem(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "admins: {usergroups: [S0PLATFORM, S0NOSUCH]}\n"
        "admin_channel: C0PLATFORM\n"
        "teams:\n"
        "  frontier:\n"
        "    channel: C0MISSING\n"
        "    namespaces: [ai-frontier-research, not-in-cluster]\n"
        "    approvers: {users: [U0LEE, U0GHOST]}\n"
        "    borrowed_priority_classes: [low-priority-experiment, research-lowest]\n"
    )
    result = run_bot("check-config", env=run_env(tmp_path, slack, kube, GPU_QUOTA_CONFIG=str(policy)))
    assert result.returncode == 1
    problems = sorted(line for line in result.stderr.splitlines() if line.startswith("problem:"))
    assert problems == [
        "problem: channel C0MISSING (policy): Slack refused to look up the channel C0MISSING: channel_not_found "
        "(the channel does not exist or the bot cannot see it (invite the bot, check the policy))",
        "problem: namespace not-in-cluster (policy) does not exist in the cluster",
        "problem: priority class research-lowest (borrowed_priority_classes) does not exist in the cluster",
        "problem: user U0GHOST (policy): Slack refused to look up the user U0GHOST: user_not_found",
        "problem: user group S0NOSUCH (policy): Slack refused to look up the user group S0NOSUCH: no_such_subteam "
        "(the user group does not exist)",
    ]


def test_check_config_passes_a_sound_configuration(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    result = run_bot("check-config", env=run_env(tmp_path, slack, kube))
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout and "skipped Prometheus" in result.stdout
