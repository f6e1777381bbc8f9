"""Two real bot processes sharing the machine's PostgreSQL: one leader runs the jobs, a click that
lands on both replicas is applied once, and the survivor takes over when the leader is killed."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

from bot.sandbox.history import A100, H100, History, PodRun
from bot.sandbox.session import SIGNING_SECRET
from bot.sandbox.slack_client import SlackSide
from tests.integration.processes import ROOT, bot_command, metric, ok, run_env, wait_for
from tests.prometheus_server import PrometheusServer, binaries_available


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    step = timedelta(minutes=5)
    end = datetime.fromtimestamp((datetime.now(timezone.utc) - timedelta(hours=3)).timestamp() // 300 * 300, timezone.utc)
    start = end - timedelta(days=2)
    history = History(
        step=step,
        start=start,
        end=end,
        pods=[
            PodRun("ai-frontier-research", "train", 2, "n1", A100, start, end, 0.6),
            PodRun("biz-model-serving", "serve", 4, "n2", H100, start, end, 0.4),
        ],
    )
    server = PrometheusServer(tmp_path / "prometheus").load(history).start()
    yield server
    server.stop()


class Replica:
    def __init__(self, name: str, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.base = f"http://127.0.0.1:{env['PORT']}"
        self.log = log_dir / f"{name}.log"
        self.process = subprocess.Popen(
            bot_command("run"), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self.log.open("w")
        )

    def leader(self) -> bool:
        return metric(self.base, "gpu_quota_leader") == 1.0

    def job_runs(self, job: str) -> float:
        return metric(self.base, "gpu_quota_job_runs_total", task=job, outcome="ok") or 0.0

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=30)


@pytest.mark.postgres
@pytest.mark.prometheus
def test_two_replicas(tmp_path: Path, stand_ins: tuple, postgres_url: str, prometheus: PrometheusServer) -> None:
    slack, kube = stand_ins
    policy = tmp_path / "policy.yaml"
    policy.write_text((ROOT / "bot" / "sandbox" / "policy.yaml").read_text() + "\nmetrics:\n  sample_interval: 5m\n")
    common = dict(
        DATABASE_URL=postgres_url,
        PROMETHEUS_URL=prometheus.url,
        GPU_QUOTA_CONFIG=str(policy),
        LEADER_CHECK_SECONDS="0.5",
        RECONCILE_INTERVAL_SECONDS="5",
    )
    replicas = [Replica(name, run_env(tmp_path, slack, kube, **common), tmp_path) for name in ("a", "b")]
    try:
        for replica in replicas:
            wait_for(lambda r=replica: ok(f"{r.base}/readyz"), timeout=60, what=f"replica {replica.name} to be ready")
        wait_for(lambda: sum(r.leader() for r in replicas) == 1, timeout=30, what="a leader")
        leader = next(r for r in replicas if r.leader())
        follower = next(r for r in replicas if r is not leader)

        # Exactly one digest per team and day, though both replicas started at once.
        digest_channels = {"C0FRONTIER", "C0BIZ", "C0PLATFORM"}
        wait_for(
            lambda: digest_channels <= {r.channel for r in slack.records if r.kind == "file"}, timeout=60, what="the digests"
        )
        wait_for(lambda: leader.job_runs("reconcile") >= 2, timeout=30, what="the leader's reconcile runs")
        digests = [r for r in slack.records if r.kind == "message" and "GPU cost" in str(r.blocks)]
        assert sorted(r.channel for r in digests) == sorted(digest_channels)
        assert follower.job_runs("reconcile") == 0  # the follower runs no jobs

        # A request submitted on one replica; the same approval lands on both at once: applied once.
        side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("r"), names={})
        body = side.slash_command(user_id="U0ALICE", text="request ai-frontier-research +4 for 3d fine-tune")
        requests.post(f"{replicas[0].base}/slack/events", data=body, headers=side.sign(body), timeout=10)
        card = wait_for(
            lambda: next(
                (r for r in slack.records if r.kind == "message" and r.channel == "C0FRONTIER" and "GQ-1" in r.text), None
            ),
            what="the request message",
        )
        click = side.block_action(user_id="U0LEE", action_id="gq_approve", value="1", channel_id=card.channel, message_ts=card.ts)
        threads = [
            threading.Thread(
                target=requests.post,
                args=(f"{r.base}/slack/events",),
                kwargs={"data": click, "headers": side.sign(click), "timeout": 10},
            )
            for r in replicas
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wait_for(lambda: kube.hard("ai-frontier-research", "compute-quota") == "8", what="the quota patch")
        wait_for(lambda: len([r for r in slack.records if r.kind == "response"]) >= 3, what="both answers")
        patches = [w for w in kube.writes() if w[0] == "PATCH" and not w[2].get("dryRun")]
        assert len(patches) == 1
        approvals = [r for r in slack.thread(card.channel, card.ts) if "Approved by" in r.text]
        assert len(approvals) == 1
        assert any("already approved" in r.text for r in slack.records if r.kind == "response")

        # The leader dies without a goodbye; the other replica takes over within the lease.
        leader.stop(signal.SIGKILL)
        wait_for(follower.leader, timeout=30, what="the takeover")
        runs = follower.job_runs("reconcile")
        wait_for(lambda: follower.job_runs("reconcile") > runs, timeout=30, what="jobs on the new leader")
        assert follower.stop() == 0
        assert "stopped" in follower.log.read_text()
    finally:
        for replica in replicas:
            if replica.process.poll() is None:
                replica.process.kill()
