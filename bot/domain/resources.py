"""GPU resources: the extended resource names a quota governs, and how each is spelled elsewhere. Pure.

A namespace's quota may govern several extended resources: whole GPUs (``nvidia.com/gpu``), MIG
profiles under the NVIDIA device plugin's ``mixed`` strategy (``nvidia.com/mig-3g.40gb``; a ``+me``
profile is advertised as ``.me``: ``nvidia.com/mig-1g.10gb.me``), time-sliced GPUs
(``nvidia.com/gpu.shared``), ``amd.com/gpu``, ``gpu.intel.com/i915`` or any other name. A
ResourceQuota counts an extended resource only as ``requests.<name>``; ``limits.<name>`` is
accepted by the API server and ignored. kube-state-metrics exports the resource as a label value
with every character outside ``[a-zA-Z0-9_]`` replaced by ``_`` (``nvidia_com_mig_3g_40gb``);
the DCGM exporter labels a MIG instance's series with ``GPU_I_PROFILE`` (``3g.40gb``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

GPU = "nvidia.com/gpu"  # whole NVIDIA GPUs: what every quota governed before resources were configurable
MIG_SLICES = 7  # an A100/H100/H200/B200 has seven compute slices; a profile "<g>g.<memory>" takes g of them

_RESOURCE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_MIG = re.compile(r"mig-(?P<g>[1-7])g\.(?P<memory>\d+gb)(?P<media>\.me)?")
_NOT_A_LABEL_CHARACTER = re.compile(r"[^a-zA-Z0-9_]")


def is_resource_name(text: str) -> bool:
    """True for a domain-prefixed extended resource name (``vendor.example/thing``)."""
    return len(text) <= 253 and _RESOURCE_NAME.fullmatch(text) is not None


def quota_key(resource: str) -> str:
    """The ResourceQuota key that counts ``resource`` (the only one enforced for extended resources)."""
    return f"requests.{resource}"


def limits_key(resource: str) -> str:
    """The ``limits.`` key some quotas also carry; the API server ignores it for extended resources."""
    return f"limits.{resource}"


def metrics_label(resource: str) -> str:
    """The resource as kube-state-metrics labels it: ``nvidia.com/mig-3g.40gb`` -> ``nvidia_com_mig_3g_40gb``."""
    return _NOT_A_LABEL_CHARACTER.sub("_", resource)


@dataclass(frozen=True)
class MigProfile:
    """A MIG profile: ``slices`` of the GPU's seven compute slices and its memory, as the device plugin names it."""

    slices: int
    memory: str  # "40gb"
    media: bool = False  # a "+me" profile (media extensions), advertised with a ".me" suffix

    @property
    def name(self) -> str:
        """The profile as DCGM's ``GPU_I_PROFILE`` and ``nvidia-smi`` spell it: ``3g.40gb``, ``1g.10gb+me``."""
        return f"{self.slices}g.{self.memory}{'+me' if self.media else ''}"

    @property
    def compute_fraction(self) -> Fraction:
        """The share of the parent GPU's compute: ``g/7``."""
        return Fraction(self.slices, MIG_SLICES)


def mig_profile(resource: str) -> MigProfile | None:
    """The MIG profile a resource name stands for (``nvidia.com/mig-3g.40gb``), None for anything else."""
    vendor, _, name = resource.partition("/")
    if vendor != "nvidia.com":
        return None
    match = _MIG.fullmatch(name)
    if match is None:
        return None
    return MigProfile(int(match["g"]), match["memory"], media=bool(match["media"]))


def mig_resource(profile: str) -> str | None:
    """The resource name of a DCGM ``GPU_I_PROFILE`` value: ``3g.40gb`` -> ``nvidia.com/mig-3g.40gb``,
    ``1g.10gb+me`` -> ``nvidia.com/mig-1g.10gb.me``; None when the value is not a profile."""
    resource = f"nvidia.com/mig-{profile.replace('+me', '.me')}"
    return resource if mig_profile(resource) is not None else None


def short_name(resource: str) -> str:
    """What a person types for a resource: the part after the vendor prefix (``mig-3g.40gb``, ``gpu``)."""
    return resource.partition("/")[2] or resource


@dataclass(frozen=True)
class Resolved:
    """The governed resource a person's word names."""

    resource: str


@dataclass(frozen=True)
class Unresolved:
    """A word that names no governed resource (``candidates`` empty) or several (the ones it could mean)."""

    word: str
    candidates: tuple[str, ...]


def resolve(word: str | None, governed: tuple[str, ...]) -> Resolved | Unresolved:
    """The governed resource ``word`` names: the full name, its short name (``mig-3g.40gb``), or a part of
    one that matches exactly one governed resource (``3g.40gb``, ``3g``). No word: the only governed one."""
    if word is None:
        if len(governed) == 1:
            return Resolved(governed[0])
        return Unresolved("", governed)
    wanted = word.strip().lower()
    exact = [r for r in governed if wanted in (r.lower(), short_name(r).lower())]
    if len(exact) == 1:
        return Resolved(exact[0])
    partial = exact or [r for r in governed if wanted and wanted in short_name(r).lower()]
    if len(partial) == 1:
        return Resolved(partial[0])
    return Unresolved(word, tuple(partial))
