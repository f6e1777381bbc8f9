"""The words of a namespace's GPU pods (``bot.domain.priority``): their mix by priority class, the classes
borrowed GPUs are not meant for, and one pod's line, in the reader's language.

The domain hands over numbers and class names (``""``: a pod without a class); the sentences are whole
catalog entries (``sentences.fill``), so a translator may reorder them. Class and pod names are shown as
they are (escaped at render), never translated.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.adapters.i18n import N_, format_gpus, gettext, tr, tr_n
from bot.adapters.slack.lists import listed
from bot.adapters.slack.sentences import Value, fill, fill_n
from bot.domain.priority import ClassWarning, GpuPod, PodMix
from bot.services.text import Code, Moment, Notice

# Translators: how a GPU pod without a priority class is shown (its priority is 0), in place of a class name.
NO_CLASS = N_("default")

# A pod's line per phase (the phases of a pod that has not finished), with and without when it started.
_POD_LINES = {
    "Running": (
        N_("{pod}: {gpus}, {priority_class}, running, since {since}"),
        N_("{pod}: {gpus}, {priority_class}, running"),
    ),
    "Pending": (
        N_("{pod}: {gpus}, {priority_class}, pending, since {since}"),
        N_("{pod}: {gpus}, {priority_class}, pending"),
    ),
    "Unknown": (
        N_("{pod}: {gpus}, {priority_class}, unknown, since {since}"),
        N_("{pod}: {gpus}, {priority_class}, unknown"),
    ),
}
# Any other phase, named as the API server says it.
_OTHER_PHASE = (
    N_("{pod}: {gpus}, {priority_class}, {phase}, since {since}"),
    N_("{pod}: {gpus}, {priority_class}, {phase}"),
)


def class_name(priority_class: str) -> str:
    """A priority class as shown: its name, or the words for none."""
    return priority_class or gettext(NO_CLASS)


def pods_count(count: int) -> str:
    return tr_n("{count} pod", "{count} pods", count)


def mix_notice(mix: PodMix) -> Notice:
    """``running: 3 GPUs in 2 pods — 2 × research-low, 1 × default; 1 GPU pod pending``."""
    pending = mix.pending_pods
    if mix.pods == 0:
        if pending:
            return fill_n(
                "running: no GPU pods; {count} GPU pod pending", "running: no GPU pods; {count} GPU pods pending", pending
            )
        return fill("running: no GPU pods")
    values: dict[str, Value] = {
        "gpus": format_gpus(mix.gpus),
        "pods": pods_count(mix.pods),
        # Translators: GPUs of one priority class in the pod mix: "2 × research-low".
        "classes": listed(
            fill("{count} × {priority_class}", count=s.gpus, priority_class=class_name(s.label)) for s in mix.classes
        ),
    }
    if pending:
        return fill_n(
            "running: {gpus} in {pods} — {classes}; {count} GPU pod pending",
            "running: {gpus} in {pods} — {classes}; {count} GPU pods pending",
            pending,
            **values,
        )
    return fill("running: {gpus} in {pods} — {classes}", **values)


def warning_notice(warning: ClassWarning, allowed: Sequence[str]) -> Notice:
    """One line for the card: which class, how much, and why it is warned about."""
    what = tr("{gpus} in {pods}", gpus=format_gpus(warning.gpus), pods=pods_count(warning.pods))
    values: dict[str, Value] = {"what": what, "priority_class": class_name(warning.priority_class), "allowed": listed(allowed)}
    if warning.higher:
        return fill(
            ":warning: {what} run as {priority_class} (priority {value}), higher than borrowed GPUs allow ({allowed}: at most {highest})",
            value=str(warning.value),
            highest=str(warning.highest_allowed),
            **values,
        )
    return fill(
        ":warning: {what} run as {priority_class}, not one of the classes borrowed GPUs are meant for ({allowed})", **values
    )


def pod_line(pod: GpuPod) -> Notice:
    """``a-0: 2 GPUs, research-low, running, since <date>`` (the pod's name in a code span)."""
    with_start, without = _POD_LINES.get(pod.phase, _OTHER_PHASE)
    values: dict[str, Value] = {
        "pod": Code(pod.name),
        "gpus": format_gpus(pod.gpus),
        "priority_class": class_name(pod.priority_class),
        "phase": pod.phase.lower(),
    }
    started: datetime | None = pod.started_at
    if started is not None:
        return fill(with_start, since=Moment(started), **values)
    return fill(without, **values)
