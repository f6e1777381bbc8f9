"""Priority classes of GPU pods: the mix a namespace runs, and whether it fits what borrowed GPUs are for.

Pure: the pods and the PriorityClass values come in as values. A pod's ``priority_class`` is its
``spec.priorityClassName``; empty means the pod has none (no class was named and the cluster has no
``globalDefault`` class, whose name admission would otherwise have filled in), so its priority is 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

# How a pod without a priority class was shown before the words moved to the edge
# (bot.adapters.slack.pod_words.class_name): still read by GpuPod.class_label for the Slack word modules
# that have not moved yet. The mix and the warnings below name no class as "".
NO_CLASS_LABEL = "default"
_INSUFFICIENT_EXTENDED = re.compile(r"Insufficient [a-z0-9.-]+/")  # "Insufficient nvidia.com/mig-3g.40gb"


@dataclass(frozen=True)
class GpuPod:
    """A pod requesting a GPU resource (``gpus`` of it) that has not finished (phase Pending, Running or Unknown)."""

    namespace: str
    name: str
    gpus: int
    priority_class: str  # "" when the pod has none
    phase: str
    started_at: datetime | None  # status.startTime, else the creation time
    priority: int | None = None  # spec.priority, resolved by admission from the class
    nominated_node: str | None = None  # status.nominatedNodeName: the scheduler is preempting pods for it

    @property
    def running(self) -> bool:
        return self.phase == "Running"

    @property
    def class_label(self) -> str:
        return self.priority_class or NO_CLASS_LABEL


@dataclass(frozen=True)
class ClassShare:
    label: str  # the priority class's name, "" for pods without one
    gpus: int
    pods: int


@dataclass(frozen=True)
class PodMix:
    """What a namespace runs on GPUs now, by priority class (most GPUs first)."""

    gpus: int
    pods: int
    classes: tuple[ClassShare, ...]
    pending_pods: int = 0


def pod_mix(pods: Iterable[GpuPod]) -> PodMix:
    """The running GPU pods grouped by priority class; pending pods are only counted."""
    shares: dict[str, list[int]] = {}
    gpus = count = pending = 0
    for pod in pods:
        if not pod.running:
            pending += pod.phase == "Pending"
            continue
        share = shares.setdefault(pod.priority_class, [0, 0])
        share[0] += pod.gpus
        share[1] += 1
        gpus += pod.gpus
        count += 1
    classes = tuple(ClassShare(label, g, n) for label, (g, n) in sorted(shares.items(), key=lambda item: (-item[1][0], item[0])))
    return PodMix(gpus=gpus, pods=count, classes=classes, pending_pods=pending)


@dataclass(frozen=True)
class ClassWarning:
    """Running GPU pods of a class that borrowed GPUs are not meant for."""

    priority_class: str  # "" for pods without a class
    gpus: int
    pods: int
    value: int | None  # the class's priority value, None when the cluster does not know the class
    highest_allowed: int | None  # the highest value among the allowed classes the cluster knows

    @property
    def higher(self) -> bool:
        """True when the class outranks every allowed class (known values on both sides)."""
        return self.value is not None and self.highest_allowed is not None and self.value > self.highest_allowed


def borrowed_class_warnings(pods: Iterable[GpuPod], *, allowed: Sequence[str], values: Mapping[str, int]) -> list[ClassWarning]:
    """Running pods whose class is not one of ``allowed`` and may outrank them.

    ``values`` maps PriorityClass names to their ``value``. A class outside the list is fine when
    its value is at most the highest allowed value (lower priority is what borrowed GPUs are for);
    it is warned about when it is higher, or when either value is unknown (it cannot be compared).
    A pod without a class has priority 0.
    """
    if not allowed:
        return []
    known = [values[name] for name in allowed if name in values]
    highest = max(known) if known else None
    grouped: dict[str, list[int]] = {}
    for pod in pods:
        if not pod.running or pod.priority_class in allowed:
            continue
        share = grouped.setdefault(pod.priority_class, [0, 0])
        share[0] += pod.gpus
        share[1] += 1
    warnings = []
    for name, (gpus, count) in sorted(grouped.items()):
        value = values.get(name) if name else 0
        if value is not None and highest is not None and value <= highest:
            continue
        warnings.append(ClassWarning(name, gpus, count, value, highest))
    return warnings


class WaitCause(StrEnum):
    """Why a GPU pod waits in the scheduler (not the quota: that refusal is a FailedCreate ``exceeded quota``)."""

    PREEMPTING = "preempting"  # lower-priority pods are being preempted to make room (a nominated node)
    NO_VICTIMS = "no_victims"  # no free GPU, and nothing of lower priority to preempt
    NEVER_PREEMPTS = "never_preempts"  # no free GPU, and its class has preemptionPolicy: Never
    NO_CAPACITY = "no_capacity"  # no free GPU (the message says nothing more about preemption)


def wait_cause(message: str, *, nominated_node: str | None = None) -> WaitCause | None:
    """The cause of a ``FailedScheduling`` message, None when it is not about GPUs.

    The kube-scheduler writes ``0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption:
    0/3 nodes are available: 3 No preemption victims found for incoming pod.``; with a class that
    never preempts, ``preemption: not eligible due to preemptionPolicy=Never.``.
    """
    if _INSUFFICIENT_EXTENDED.search(message) is None:
        return None
    if nominated_node:
        return WaitCause.PREEMPTING
    _, _, preemption = message.partition("preemption:")
    if "preemptionPolicy=Never" in preemption:
        return WaitCause.NEVER_PREEMPTS
    if "No preemption victims found" in preemption:
        return WaitCause.NO_VICTIMS
    return WaitCause.NO_CAPACITY
