"""The examples of docs/resources.md and the README's resources paragraph are policies that load, and mean what
the page says they mean."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bot.domain.policy import Policy, parse_policy

ROOT = Path(__file__).parents[2]
MIG_1G, MIG_3G = "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"


def examples() -> list[Policy]:
    blocks = re.findall(r"^```yaml\n(.*?)^```", (ROOT / "docs" / "resources.md").read_text(), flags=re.S | re.M)
    return [parse_policy(yaml.safe_load(block), source="docs/resources.md") for block in blocks]


def test_the_three_examples_load_and_govern_what_the_page_says() -> None:
    mig, several, kueue = examples()
    assert mig.governed_resources("ai-frontier-research") == (MIG_1G, MIG_3G)
    assert (mig.max_gpus("ai-frontier-research", MIG_1G), mig.max_gpus("ai-frontier-research", MIG_3G)) == (14, 4)
    assert several.governed_resources("ai-frontier-research") == ("nvidia.com/gpu", MIG_3G)
    assert (several.max_gpus("ai-frontier-research"), several.max_gpus("ai-frontier-research", MIG_3G)) == (16, 4)
    assert several.governed_resources("ai-frontier-rocm") == ("amd.com/gpu",)
    assert several.max_gpus("ai-frontier-rocm", "amd.com/gpu") == 8
    queue = kueue.cluster_queue("ai-frontier-batch")
    assert queue is not None and (queue.name, queue.flavor, queue.adjust_borrowing_limit) == ("frontier-cq", "h100", True)


def test_the_readme_s_resource_lists_load() -> None:
    paragraph = next(p for p in (ROOT / "README.md").read_text().split("\n\n") if "with `resources`" in p)
    lists = re.findall(r"`(\[.*?\])`", paragraph)
    assert len(lists) == 4  # the default, MIG profiles, several resources, a ClusterQueue
    for written in lists:
        team = {"channel": "C1", "namespaces": ["ns-a"], "approvers": {"users": ["U1"]}, "resources": yaml.safe_load(written)}
        assert parse_policy({"teams": {"t": team}}).governed_resources("ns-a")
