"""``check-config`` on governed resources, as a person runs it against the Kubernetes API stand-in: a
resource no node advertises is a warning naming what the nodes offer, never a failure."""

from __future__ import annotations

from pathlib import Path

from tests.integration.processes import run_bot, run_env

POLICY = """\
admin_channel: C0PLATFORM
teams:
  frontier:
    channel: C0FRONTIER
    namespaces:
      - name: ai-frontier-research
        resources: [nvidia.com/gpu, nvidia.com/mig-1g.10gb, nvidia.com/mig-3g.40gb]
    approvers: {users: [U0LEE]}
  business:
    channel: C0BIZ
    namespaces: [biz-model-serving]
    approvers: {users: [U0MAYA]}
    resources: [nvidia.com/mig-3g.40gb]
"""


def test_a_governed_resource_no_node_advertises_is_a_warning_naming_what_the_nodes_offer(
    tmp_path: Path, stand_ins: tuple
) -> None:
    slack, kube = stand_ins
    kube.add_node("a100-mig", 0)
    kube.nodes["a100-mig"]["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "7"  # an A100 in MIG mode
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    result = run_bot("check-config", env=run_env(tmp_path, slack, kube, GPU_QUOTA_CONFIG=str(policy)))
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: no node advertises nvidia.com/mig-3g.40gb (governed in ai-frontier-research, biz-model-serving);"
        " the nodes offer nvidia.com/gpu, nvidia.com/mig-1g.10gb"
    ]
    assert "configuration OK" in result.stdout
