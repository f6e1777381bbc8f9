"""Karmada FederatedResourceQuotas as a quota target: what the bot reads and governs of them. Pure.

A namespace that Karmada propagates to several member clusters may keep its quota in a
``FederatedResourceQuota`` (``policy.karmada.io/v1alpha1``) on the Karmada control plane, in the
namespace of the same name there: ``spec.overall`` limits the namespace over all members, and each entry
of ``spec.staticAssignments`` gives one member cluster its ``hard``, which Karmada propagates as a
ResourceQuota of the same name in that member's namespace. So a GPU resource's key is
``requests.<resource>`` (``bot.domain.resources.quota_key``: the only form a ResourceQuota enforces for an
extended resource). Karmada's webhook refuses an ``overall`` below the sum of the assignments of a resource.

The bot's base and grants are per namespace *key*, and a key names the namespace in one member cluster: so
what the bot governs for a key (``hard``) is that member's assignment, not ``overall``. A write sets the
member's assignment and moves ``overall`` by the same amount in one patch: what ``overall`` leaves to no
member (``unassigned``) stays as it was, the other members' assignments are untouched, and the sum never
passes ``overall``. ``used`` is what Karmada's status controller reports for the member
(``status.aggregatedStatus``: the propagated ResourceQuota's ``used``), ``enforced`` the ``hard`` reported
there: what the member enforced when Karmada last looked (a write shows there once Karmada's controllers
have run). Each write stamps two annotations per member and resource (``stamp_annotations`` with the member
as qualifier), so a member's hand-edited assignment is told from the bot's write, whichever member wrote last.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.quota import QuotaSnapshot


@dataclass(frozen=True)
class FederatedQuotaRef:
    """Where the policy keeps a scope's quota in a FederatedResourceQuota: its ``name`` (in the namespace of the
    scope's name on the plane), the ``member`` cluster whose assignment the scope is (``clusterName`` in
    ``spec.staticAssignments``, as Karmada names the cluster), and the Karmada ``plane`` that serves it (its
    name in the policy)."""

    name: str
    member: str
    plane: str


@dataclass(frozen=True)
class MemberAssignment:
    """One entry of ``spec.staticAssignments``: a member cluster's ``hard`` of the resource (None: it has no
    limit of it)."""

    member: str
    hard: int | None


@dataclass(frozen=True, kw_only=True)
class FederatedQuotaSnapshot(QuotaSnapshot):
    """A member cluster's assignment of one resource in a FederatedResourceQuota at one ``resourceVersion``,
    as a quota snapshot.

    ``namespace`` is the namespace key the bot governs it for, ``name`` the FederatedResourceQuota's; ``hard``
    the member's assignment, ``used`` what Karmada reports the member uses (0 before it reports), ``limits``
    always None, ``bot_applied`` the bot's stamp for this member. ``assignment_index`` locates the member's
    entry in ``spec.staticAssignments`` at this version only (the list is atomic: a person may reorder it)."""

    member: str
    resource: str
    assignment_index: int
    overall: int  # spec.overall of the resource
    assignments: tuple[MemberAssignment, ...]  # every member's, in the spec's order (this one's included)
    enforced: int | None  # status.aggregatedStatus hard of the member (None: not reported yet)
    annotated: bool  # the object had metadata.annotations at this version (a JSON Patch cannot add into a missing map)

    @property
    def unassigned(self) -> int:
        """What ``overall`` leaves to no member; a write keeps it as it is."""
        return self.overall - sum(a.hard or 0 for a in self.assignments)

    def overall_for(self, gpus: int) -> int:
        """``overall`` once this member's assignment is ``gpus``: moved by the same amount, so ``unassigned``
        stays and the webhook's rule (overall at least the sum of the assignments) still holds."""
        return self.overall + gpus - self.hard
