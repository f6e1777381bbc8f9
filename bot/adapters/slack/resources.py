"""How a governed resource reads in a message, in the reader's language: "4 GPUs", "2 MIG 3g.40gb slices", "3 × amd.com/gpu"."""

from __future__ import annotations

from bot.adapters.i18n import format_number, gettext, ngettext, substitute
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
        return gettext("shared GPU")
    return resource


def amount_of(count: int, resource: str) -> str:
    """``count`` of ``resource``: ``4 GPUs``, ``1 MIG 3g.40gb slice``, ``2 shared GPUs``, ``3 × amd.com/gpu``."""
    values = {"count": format_number(count), "profile": resource_label(resource)}  # the sign kept in what is shown
    size = abs(count)  # which picks the plural form
    if resource == GPU:
        return substitute(ngettext("{count} GPU", "{count} GPUs", size), values)
    if mig_profile(resource) is not None:
        return substitute(ngettext("{count} {profile} slice", "{count} {profile} slices", size), values)
    if resource == SHARED_GPU:
        return substitute(ngettext("{count} shared GPU", "{count} shared GPUs", size), values)
    return f"{values['count']} × {resource}"  # a resource the bot has no words for, named as the cluster names it


def unit_hours(resource: str) -> str:
    """What an hour of ``resource`` is called in cost figures: GPU-hours, or slice-hours for a MIG profile."""
    return "slice-hours" if mig_profile(resource) is not None else "GPU-hours"
