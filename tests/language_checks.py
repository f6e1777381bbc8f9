"""What every test of words in two languages checks: nothing left in English, nothing missing from the catalogs.

``foreign_words`` finds English words in Chinese output once what is shown as it is has been taken out
(names, ids, what a person typed: the fixture's ``values``; mentions, links and date tokens; code spans;
emoji codes; the terms Chinese technical writing keeps in Latin letters). ``catalog_misses`` collects
the sentences asked for in a language whose catalog lacks them (``bot.adapters.i18n.missed``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from bot.adapters import i18n
from bot.domain.languages import Language

# Latin words a Chinese sentence may keep: names of products, APIs and Kubernetes kinds, units and
# abbreviations used as they are in Chinese technical writing, and the bot's own commands and keywords.
LATIN_KEPT = frozenset(
    {
        *"GPU GPUs MIG CPU CUDA DCGM API RBAC UTC ID URL PNG CSV SMTP TLS YAML JSON OK".split(),
        *"Slack Kubernetes Kueue Karmada Prometheus Grafana Helm Thanos Mimir NVIDIA kubectl helm".split(),
        *"Pod Pods Job Jobs Deployment StatefulSet DaemonSet Workload Workloads ResourceQuota ClusterQueue".split(),
        *"LocalQueue ResourceFlavor FederatedResourceQuota PriorityClass ConfigMap cohort".split(),
        *"nominalQuota borrowingLimit preemptionPolicy Never nodeSelector affinity tolerations".split(),
        *"gpu-quota-bot gpu-quota request approve deny status cancel release extend retry shift cost from to".split(),
        *"audit doctor why help list permanent for check-config kube-state-metrics dcgm-exporter".split(),
        *"YYYY MM DD GiB h".split(),
        *"ServiceAccount ServiceMonitor".split(),  # the kinds doctor's fixes name (RBAC, the Prometheus operator)
    }
)
_MARKUP = (
    re.compile(r"<[@#!][^>]*>"),  # mentions, channels, date tokens
    re.compile(r"<https?:[^>]*>"),  # links
    re.compile(r"`[^`]*`"),  # code spans: commands, names, values
    re.compile(r":[a-z0-9_+-]+:"),  # emoji codes
    re.compile(r"[\w.-]+/[\w./-]+|[\w-]+\.[\w.-]+"),  # nvidia.com/gpu, file.yaml, policy keys (a.b)
    re.compile(r"\{\w+\}"),  # a catalog sentence's placeholders
)


def foreign_words(text: str, *, values: Iterable[str] = ()) -> list[str]:
    """English words left in Chinese ``text`` that are not values shown as they are or kept terms."""
    for value in sorted(values, key=len, reverse=True):
        if value:
            text = text.replace(value, " ")
    for pattern in _MARKUP:
        text = pattern.sub(" ", text)
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", text)
    return [word for word in words if word not in LATIN_KEPT and not word.isupper() and len(word) > 1]


@contextmanager
def catalog_misses() -> Iterator[set[tuple[Language, str]]]:
    """The sentences asked for, inside the block, in a language whose catalog lacks them."""
    before = set(i18n.missed)
    found: set[tuple[Language, str]] = set()
    try:
        yield found
    finally:
        found.update(i18n.missed - before)
