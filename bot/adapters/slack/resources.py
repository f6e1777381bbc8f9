"""How a governed resource reads in a message, in the reader's language: "4 GPUs", "2 MIG 3g.40gb slices",
"3 × amd.com/gpu" ("4 块 GPU", "2 个 MIG 3g.40gb 切片"); and a signed change of a figure ("+2", "-1").

A MIG profile's name and any other resource's name are names: shown as they are in every language."""

from __future__ import annotations

from bot.adapters.i18n import format_gpus, format_number, ngettext, substitute, tr
from bot.domain.resources import GPU, mig_profile

SHARED_GPU = "nvidia.com/gpu.shared"  # the device plugin's time-slicing with renameByDefault


def resource_label(resource: str) -> str:
    """The resource's name for people: ``GPU``, ``MIG 3g.40gb``, ``shared GPU``, else its full name."""
    if resource == GPU:
        return "GPU"
    profile = mig_profile(resource)
    if profile is not None:
        return f"MIG {profile.name}"
    if resource == SHARED_GPU:
        return tr("shared GPU")
    return resource


def amount_of(count: int, resource: str) -> str:
    """``count`` of ``resource``: ``4 GPUs``, ``1 MIG 3g.40gb slice``, ``2 shared GPUs``, ``3 × amd.com/gpu``
    (the figure first in every language)."""
    values = {"count": format_number(count), "resource": resource_label(resource)}  # the form is that of abs(count)
    if resource == GPU:
        return format_gpus(count)
    if mig_profile(resource) is not None:
        return substitute(ngettext("{count} {resource} slice", "{count} {resource} slices", abs(count)), values)
    if resource == SHARED_GPU:
        return substitute(ngettext("{count} shared GPU", "{count} shared GPUs", abs(count)), values)
    return f"{values['count']} × {resource}"  # no words: the same in every language


def gpus_of(count: int) -> str:
    """A number of whole GPUs (``1 GPU``, ``-2 GPUs``; ``3 块 GPU``)."""
    return amount_of(count, GPU)


def signed(count: int) -> str:
    """A change of a figure with its sign: ``+2``, ``-1``, ``0``."""
    figure = format_number(count)
    return "+" + figure if count > 0 else figure


def unit_hours(resource: str) -> str:
    """What an hour of ``resource`` is called in cost figures: GPU-hours, or slice-hours for a MIG profile."""
    return tr("slice-hours") if mig_profile(resource) is not None else tr("GPU-hours")
