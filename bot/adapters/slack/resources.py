"""How a governed resource reads in a message: "4 GPUs", "2 MIG 3g.40gb slices", "3 × amd.com/gpu"."""

from __future__ import annotations

from bot.domain.resources import GPU, mig_profile
from bot.services.text import gpus

SHARED_GPU = "nvidia.com/gpu.shared"  # the device plugin's time-slicing with renameByDefault


def resource_label(resource: str) -> str:
    """The resource's name for people: ``GPU``, ``MIG 3g.40gb``, ``shared GPU``, else its full name."""
    if resource == GPU:
        return "GPU"
    profile = mig_profile(resource)
    if profile is not None:
        return f"MIG {profile.name}"
    if resource == SHARED_GPU:
        return "shared GPU"
    return resource


def amount_of(count: int, resource: str) -> str:
    """``count`` of ``resource``: ``4 GPUs``, ``1 MIG 3g.40gb slice``, ``2 shared GPUs``, ``3 × amd.com/gpu``."""
    if resource == GPU:
        return gpus(count)
    plural = abs(count) != 1
    if mig_profile(resource) is not None:
        return f"{count} {resource_label(resource)} slice{'s' if plural else ''}"
    if resource == SHARED_GPU:
        return f"{count} shared GPU{'s' if plural else ''}"
    return f"{count} × {resource}"


def unit_hours(resource: str) -> str:
    """What an hour of ``resource`` is called in cost figures: GPU-hours, or slice-hours for a MIG profile."""
    return "slice-hours" if mig_profile(resource) is not None else "GPU-hours"
