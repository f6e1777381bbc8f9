"""The policy file: teams, the namespaces they own, who approves, and the limits.

Loaded once from YAML (``GPU_QUOTA_CONFIG``) into frozen pydantic models; the decision functions at
the bottom are pure. Only namespaces named here are ever touched by the bot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from apscheduler.triggers.cron import CronTrigger
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.domain.auto_notes import AutoApprovalNote, AutoRefusal
from bot.domain.capacity import ON_DEMAND_PLACEMENT, SPOT, Placement
from bot.domain.clusters import HOME, cluster_of, is_label, is_namespace_key, split_key
from bot.domain.durations import format_duration, parse_duration
from bot.domain.karmada import FederatedQuotaRef
from bot.domain.languages import Language, parse_language, supported_tags
from bot.domain.mail import parse_address
from bot.domain.quota import QuotaScope
from bot.domain.resources import GPU, MIG_SLICES, is_resource_name, mig_profile, short_name


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration)]
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _class_names(value: Any) -> Any:
    """PriorityClass names are DNS subdomains (lower case, at most 253 characters)."""
    if isinstance(value, list | tuple):
        bad = [v for v in value if not isinstance(v, str) or len(v) > 253 or not _SUBDOMAIN.fullmatch(v)]
        if bad:
            raise ValueError(f"not PriorityClass names: {', '.join(map(str, bad))}")
    return value


PriorityClassNames = Annotated[tuple[str, ...], BeforeValidator(_class_names)]


def _object_name(value: Any) -> Any:
    """Kubernetes object names (a ClusterQueue, a ResourceFlavor) are DNS subdomains of at most 253 characters."""
    if isinstance(value, str) and (len(value) > 253 or not _SUBDOMAIN.fullmatch(value)):
        raise ValueError(f"'{value}' is not a Kubernetes object name (lower case letters, digits, '-' and '.')")
    return value


ObjectName = Annotated[str, BeforeValidator(_object_name)]


def _language(value: Any) -> Any:
    """A language tag as people write it (``zh-CN``, ``zh_Hans``, ``en``) read as one the bot speaks."""
    if isinstance(value, str):
        language = parse_language(value)
        if language is None:
            raise ValueError(f"the bot speaks {supported_tags()}; {value!r} is not one of them")
        return language
    return value


SpokenLanguage = Annotated[Language, BeforeValidator(_language)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class People(_Frozen):
    """Slack user ids (``U...``/``W...``) and user group ids (``S...``)."""

    users: frozenset[str] = Field(default=frozenset(), description="Slack user ids (U... or W...).")
    usergroups: frozenset[str] = Field(
        default=frozenset(), description="Slack user group ids (S...); membership is read from Slack for every decision."
    )

    @property
    def empty(self) -> bool:
        return not self.users and not self.usergroups

    @field_validator("users")
    @classmethod
    def _user_ids(cls, users: frozenset[str]) -> frozenset[str]:
        bad = sorted(u for u in users if not u[:1] in ("U", "W"))
        if bad:
            raise ValueError(f"not Slack user ids (they start with U or W): {', '.join(bad)}")
        return users

    @field_validator("usergroups")
    @classmethod
    def _group_ids(cls, groups: frozenset[str]) -> frozenset[str]:
        bad = sorted(g for g in groups if not g.startswith("S"))
        if bad:
            raise ValueError(f"not Slack user group ids (they start with S): {', '.join(bad)}")
        return groups


_MIG_LIKE = re.compile(r"nvidia\.com/mig-", re.IGNORECASE)
_MIG_LOOSE = re.compile(r"nvidia\.com/mig-(?P<g>\d+)g[._-]?(?P<memory>\d+)(?:gb?)?(?P<media>[.+]me)?", re.IGNORECASE)
_QUOTA_KEY_PREFIXES = ("requests.", "limits.")


def _resource_name(value: Any) -> Any:
    """An extended resource name; a quota key or a misspelt MIG profile is refused with the spelling it needs."""
    if not isinstance(value, str):
        return value  # pydantic's str check names the type
    prefix = next((p for p in _QUOTA_KEY_PREFIXES if value.startswith(p)), None)
    if prefix is not None:
        raise ValueError(f"'{value}' is a quota key: name the resource alone ('{value.removeprefix(prefix)}')")
    if _MIG_LIKE.match(value) and mig_profile(value) is None:
        raise ValueError(f"'{value}' is not a MIG profile: {_mig_spelling(value)}")
    if not is_resource_name(value):
        raise ValueError(
            f"'{value}' is not an extended resource name (a domain, a slash and a name: nvidia.com/gpu, amd.com/gpu)"
        )
    return value


def _mig_spelling(value: str) -> str:
    """How a MIG profile is spelt, after the name ``value`` probably meant."""
    spelling = f"the device plugin names them nvidia.com/mig-<g>g.<memory>gb, g from 1 to {MIG_SLICES}; a +me profile ends in .me"
    loose = _MIG_LOOSE.fullmatch(value)
    meant = f"nvidia.com/mig-{loose['g']}g.{loose['memory']}gb{'.me' if loose['media'] else ''}" if loose else None
    if meant is not None and mig_profile(meant) is not None:
        return f"did you mean {meant}? ({spelling})"
    return f"{spelling}, e.g. nvidia.com/mig-3g.40gb"


ResourceName = Annotated[str, BeforeValidator(_resource_name)]


class ClusterQueueRef(_Frozen):
    """A Kueue ClusterQueue keeps this resource's quota: the bot changes its ``nominalQuota`` in ``flavor``."""

    name: ObjectName = Field(description="The ClusterQueue (cluster-scoped) that holds the namespace's quota of this resource.")
    flavor: ObjectName = Field(
        description="The ResourceFlavor of that ClusterQueue whose nominalQuota of this resource the bot changes (other flavors are left alone)."
    )
    adjust_borrowing_limit: bool = Field(
        default=False,
        description="Also move the flavor's borrowingLimit of this resource by the same amount (a ClusterQueue in a cohort).",
    )


class FederatedQuota(_Frozen):
    """A Karmada FederatedResourceQuota keeps this resource's quota: the bot changes the member cluster's
    ``spec.staticAssignments`` entry and ``spec.overall`` together."""

    name: ObjectName = Field(description="The FederatedResourceQuota, in the namespace of the same name on the Karmada plane.")
    member: str | None = Field(
        default=None, description="The member cluster's name in Karmada; unset: the namespace's cluster's name in clusters."
    )


class GovernedResource(_Frozen):
    """An extended resource a namespace's quota governs, with its own limits and, optionally, its Kueue ClusterQueue."""

    name: ResourceName = Field(
        description="The extended resource: nvidia.com/gpu, a MIG profile (nvidia.com/mig-3g.40gb), nvidia.com/gpu.shared, amd.com/gpu, ... (a plain string entry is this name alone)."
    )
    max_gpus: int | None = Field(
        default=None,
        ge=0,
        description="The most of this resource a namespace may hold; unset: the namespace's max_gpus, else the team's limits.max_gpus_per_namespace.",
    )
    default_quota: int | None = Field(
        default=None,
        ge=0,
        description="This resource's quota when the cluster has none yet; unset: the namespace's default_quota, else defaults.default_quota.",
    )
    cluster_queue: ClusterQueueRef | None = Field(
        default=None,
        description="Keep this resource's quota in a Kueue ClusterQueue instead of the namespace's ResourceQuota; unset: the ResourceQuota.",
    )
    federated_quota: FederatedQuota | None = Field(
        default=None,
        description="Keep this resource's quota in a Karmada FederatedResourceQuota (needs karmada); unset: the cluster's own.",
    )

    @model_validator(mode="after")
    def _one_place(self) -> GovernedResource:
        if self.cluster_queue is not None and self.federated_quota is not None:
            raise ValueError(f"{self.name}: a quota lives in one place: cluster_queue or federated_quota, not both")
        return self

    def __str__(self) -> str:
        return self.name  # how the configuration reference shows a default list


def _resource_entry(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


def _distinct(resources: tuple[GovernedResource, ...]) -> tuple[GovernedResource, ...]:
    if not resources:
        raise ValueError(f"name at least one resource (leave the key out for [{GPU}])")
    names = [resource.name for resource in resources]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)} listed more than once")
    return resources


GovernedResources = Annotated[
    tuple[Annotated[GovernedResource, BeforeValidator(_resource_entry)], ...], AfterValidator(_distinct)
]
DEFAULT_RESOURCES = (GovernedResource(name=GPU),)


class ManagedNamespace(_Frozen):
    name: str = Field(description="The Kubernetes namespace (a plain string entry is this name alone).")
    quota_name: str | None = Field(default=None, description="The ResourceQuota the bot edits here; unset: defaults.quota_name.")
    max_gpus: int | None = Field(
        default=None,
        ge=0,
        description="The most of each governed resource the namespace may hold (a resource's own max_gpus wins); overrides the team's limits.max_gpus_per_namespace.",
    )
    default_quota: int | None = Field(
        default=None,
        ge=0,
        description="Each governed resource's quota when the cluster has none yet (a resource's own default_quota wins); unset: defaults.default_quota.",
    )
    resources: GovernedResources | None = Field(
        default=None, description="The resources this namespace governs, replacing the team's list; unset: the team's resources."
    )
    borrowed_priority_classes: PriorityClassNames | None = Field(
        default=None, description="PriorityClasses temporary grants are meant for; overrides the team's list (unset: the team's)."
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not is_namespace_key(name):
            raise ValueError(f"'{name}' is not a valid Kubernetes namespace name")
        return name


def _namespace(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


class Limits(_Frozen):
    """What a request may ask for; checked at submission, when the last approval lands and when the quota is written."""

    max_gpus_per_namespace: int = Field(
        default=64,
        ge=0,
        description="A request may not take a namespace above this, for each governed resource (unless the namespace or the resource sets max_gpus).",
    )
    max_duration: Duration = Field(
        default=timedelta(days=14), description="Longest temporary grant, from its start to its end with every extension."
    )


class LargeChange(_Frozen):
    """Changes of more than ``above_gpus`` GPUs need ``required`` approvals, each through the confirmation form."""

    above_gpus: int = Field(ge=1, description="A change of more than this many GPUs (up or down) is large.")
    required: int = Field(ge=1, description="Approvals a large change needs.")


class Approvals(_Frozen):
    """How many distinct approvers a request needs (never the requester)."""

    temporary: int = Field(default=1, ge=1, description="Approvals a temporary change needs.")
    permanent: int = Field(
        default=1,
        ge=1,
        description="Approvals a permanent change needs; each is given through a form (quota now -> after, monthly cost), never one click.",
    )
    large_change: LargeChange | None = Field(default=None, description="More approvals for large changes; unset: none.")
    over_budget_extra: int = Field(
        default=1, ge=0, description="Extra approvals an increase needs while the team is over budget."
    )


class AutoApprove(_Frozen):
    """Temporary increases the bot approves alone: see ``auto_approval`` for the whole rule."""

    max_gpus: int = Field(
        ge=1, description="Auto-approved GPUs active in a namespace at once, all requests together (this one included)."
    )
    max_duration: Duration = Field(
        description="Longest auto-approved grant, extensions included (a 4h grant extended by 2h waits for a person)."
    )
    max_gpu_hours_per_day: float | None = Field(
        default=None,
        gt=0,
        description="Auto-approved GPU-hours per team, resource and calendar day (schedules.timezone; a MIG profile counts its slice-hours); unset: no cap.",
    )


class Budget(_Frozen):
    """The team's monthly budget: warnings at its thresholds, one more approval for increases once it is spent."""

    monthly: float = Field(gt=0, description="The monthly budget, in pricing.currency.")
    thresholds: tuple[int, ...] = Field(
        default=(50, 80, 100), description="Percent of the monthly budget that trigger a warning (once each a month)."
    )
    mail: tuple[str, ...] = Field(
        default=(),
        description=(
            "Mail addresses that also get the budget warnings and the monthly close (finance@example.com), each its"
            " own mail: plain text and the chart as a PNG, in the team's language. Needs SMTP_URL; empty: Slack only."
        ),
    )

    @field_validator("mail", mode="before")
    @classmethod
    def _addresses(cls, value: Any) -> Any:
        """Each an address (a single string is one); the same address twice is one."""
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            return value  # pydantic's tuple check names the type
        bad = [item for item in value if not isinstance(item, str)]
        if bad:
            raise ValueError(f"not mail addresses: {', '.join(map(str, bad))}")
        return tuple(dict.fromkeys(parse_address(item) for item in value))


class Notifications(_Frozen):
    """Which scheduled messages a team gets (all on by default)."""

    digest: bool = Field(default=True, description="The daily cost digest in the team's channel.")
    budget_warnings: bool = Field(default=True, description="Budget warnings at the budget's thresholds.")
    idle_nudges: bool = Field(default=True, description="Nudges about GPUs left idle for metrics.idle_window.")
    blocked_workloads: bool = Field(
        default=True,
        description="Messages about blocked workloads: refused by the quota (with Request more) or waiting for the scheduler.",
    )


class Team(_Frozen):
    name: str = Field(default="", description="Filled from the mapping key (the team's id); not set in the file.")
    display_name: str = Field(default="", description="The team's name in messages; unset: its key.")
    channel: str = Field(description="Where requests are posted and decided (invite the bot there).")
    language: SpokenLanguage | None = Field(
        default=None,
        description=(
            "The language of the team's channel messages (cards, threads, digests, alerts): en or zh-CN; unset:"
            " the policy's language. What goes to one person follows their Slack language."
        ),
    )
    namespaces: tuple[Annotated[ManagedNamespace, BeforeValidator(_namespace)], ...] = Field(
        description="The namespaces the team owns (only these are ever touched): names, or mappings with per-namespace overrides."
    )
    approvers: People = Field(description="Who may approve or deny (besides admins); never their own requests.")
    members: People = Field(default=People(), description="Who may request; empty means anyone in the workspace.")
    owners: People = Field(default=People(), description="Mentioned in budget warnings; approvers when empty.")
    limits: Limits = Field(default=Limits(), description="Max GPUs per namespace, max duration of a grant.")
    approvals: Approvals = Field(default=Approvals(), description="How many distinct approvers a request needs.")
    auto_approve: AutoApprove | None = Field(
        default=None, description="Temporary increases the bot approves alone; unset: a person decides every request."
    )
    budget: Budget | None = Field(default=None, description="The monthly budget and its warnings; unset: no budget.")
    notifications: Notifications = Field(default=Notifications(), description="Switch scheduled messages off for this team.")
    borrowed_priority_classes: PriorityClassNames = Field(
        default=(),
        description=(
            "PriorityClasses temporary grants are meant for: request cards warn about running GPU pods of a"
            " higher class (or one the cluster does not know). Empty: no check."
        ),
    )
    resources: GovernedResources = Field(
        default=DEFAULT_RESOURCES,
        description=(
            "The extended resources the quotas of the team's namespaces govern, each with its own limits:"
            " resource names, or mappings (name, max_gpus, default_quota, cluster_queue). A namespace's"
            " resources replace this list. See docs/resources.md."
        ),
    )

    @property
    def label(self) -> str:
        return self.display_name or self.name

    @model_validator(mode="after")
    def _needs_deciders(self) -> Team:
        if self.approvers.empty:
            raise ValueError("approvers must name at least one user or user group")
        if not self.namespaces:
            raise ValueError("namespaces must name at least one namespace")
        return self


_LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def _non_negative(prices: dict[str, float]) -> dict[str, float]:
    negative = sorted(name for name, value in prices.items() if value < 0)
    if negative:
        raise ValueError(f"a price cannot be negative: {', '.join(negative)}")
    return prices


class SpotPrices(_Frozen):
    """What a GPU-hour costs on spot nodes (a capacity-type label says spot: docs/costs.md), and which work could
    run there. Each model not listed costs ``default_per_gpu_hour``, else its on-demand price."""

    models: dict[str, float] = Field(default={}, description="Price per spot GPU-hour per GPU model, by DCGM's modelName label.")
    default_per_gpu_hour: float | None = Field(
        default=None,
        ge=0,
        description="The price of a spot GPU-hour of a model spot.models does not list; unset: its on-demand price.",
    )
    preemptible_priority_classes: PriorityClassNames = Field(
        default=(),
        description=(
            "PriorityClasses of preemptible work (it may be stopped at any time): the weekly proposals name"
            " namespaces whose GPU-hours of these classes ran mostly on on-demand nodes, with what moving them to"
            " spot would save per month (a line, never an action). Empty: no such line."
        ),
    )

    @field_validator("models")
    @classmethod
    def _prices(cls, prices: dict[str, float]) -> dict[str, float]:
        return _non_negative(prices)


class PoolPrices(_Frozen):
    """What a GPU-hour costs on the nodes of one pool (``pricing.pool_label`` has this value there), whatever their
    capacity type: an on-premises pool with its own price. Each model not listed costs ``default_per_gpu_hour``,
    else its on-demand price."""

    models: dict[str, float] = Field(default={}, description="Price per GPU-hour per GPU model in this pool.")
    default_per_gpu_hour: float | None = Field(
        default=None,
        ge=0,
        description="The price of a GPU-hour of a model this pool's models do not list; unset: its on-demand price.",
    )

    @field_validator("models")
    @classmethod
    def _prices(cls, prices: dict[str, float]) -> dict[str, float]:
        return _non_negative(prices)


class Pricing(_Frozen):
    """The cost shown on requests and in digests: per GPU model for whole GPUs, per resource for the others; on
    spot nodes and in pools the policy prices on their own, at their prices (docs/costs.md)."""

    currency: str = Field(default="USD", description="The currency of prices and budgets.")
    default_per_gpu_hour: float = Field(
        default=0.95, ge=0, description="The price of a GPU-hour of a model not listed (OpenCost's default GPU price)."
    )
    models: dict[str, float] = Field(
        default={},
        description="Price per on-demand GPU-hour per GPU model, by DCGM's modelName label (on nodes of unknown capacity type too).",
    )
    resources: dict[str, float] = Field(
        default={},
        description=(
            "Price per resource-hour of a governed resource other than whole GPUs, by its name"
            " (nvidia.com/mig-3g.40gb: 1.10, amd.com/gpu: 2.0). A MIG profile not listed costs its parent GPU"
            " model's price (models, else default_per_gpu_hour) times its share of the GPU's compute (3g: 3/7);"
            " any other resource not listed costs like a whole GPU of an unknown model (default_per_gpu_hour)."
        ),
    )
    spot: SpotPrices = Field(
        default=SpotPrices(),
        description="Prices on spot nodes and the preemptible PriorityClasses; unset: spot GPU-hours cost the on-demand price.",
    )
    pool_label: str | None = Field(
        default=None,
        description=(
            "A node label whose values name node pools priced on their own (pools), e.g. example.com/gpu-pool;"
            " kube-state-metrics must export it (docs/costs.md)."
        ),
    )
    pools: dict[str, PoolPrices] = Field(
        default={},
        description=(
            "Prices per value of pool_label (an on-premises pool: on-prem: {default_per_gpu_hour: 0.60}); a pool wins"
            " over the capacity type. A value not listed is priced by the node's capacity type (check-config names it)."
        ),
    )

    @field_validator("resources")
    @classmethod
    def _resource_names(cls, prices: dict[str, float]) -> dict[str, float]:
        bad = sorted(name for name in prices if not is_resource_name(name))
        if bad:
            raise ValueError(f"not extended resource names (vendor.example/name): {', '.join(bad)}")
        if GPU in prices:
            raise ValueError(f"{GPU} is priced per GPU model: set pricing.models and pricing.default_per_gpu_hour instead")
        negative = sorted(name for name, value in prices.items() if value < 0)
        if negative:
            raise ValueError(f"a price cannot be negative: {', '.join(negative)}")
        return prices

    @field_validator("pool_label")
    @classmethod
    def _pool_label(cls, label: str | None) -> str | None:
        if label is not None and not _LABEL_KEY.fullmatch(label):
            raise ValueError(f"'{label}' is not a Kubernetes label key (example.com/gpu-pool)")
        return label

    @field_validator("pools")
    @classmethod
    def _pool_values(cls, pools: dict[str, PoolPrices]) -> dict[str, PoolPrices]:
        bad = sorted(value for value in pools if not _LABEL_VALUE.fullmatch(value))
        if bad:
            raise ValueError(f"not Kubernetes label values: {', '.join(bad)}")
        return pools

    @model_validator(mode="after")
    def _pools_need_their_label(self) -> Pricing:
        if self.pools and not self.pool_label:
            raise ValueError("pricing.pools needs pricing.pool_label: the node label whose values name the pools")
        if self.pool_label and not self.pools:
            raise ValueError("pricing.pool_label is set but pricing.pools prices no pool")
        return self

    @property
    def by_node(self) -> bool:
        """Whether prices depend on the node: spot or a pool is priced apart (else the split only informs)."""
        return bool(self.pools) or self.spot != SpotPrices()

    def price_for(self, model: str | None, placement: Placement = ON_DEMAND_PLACEMENT) -> float:
        """The price of a whole GPU-hour of ``model`` (DCGM's modelName; None or unlisted: the default) where it ran:
        in a priced pool its list, on spot the spot list, else (and for what those lists leave out) on-demand's."""
        listed = self.pools.get(placement.pool) if placement.pool else self.spot if placement.capacity == SPOT else None
        if listed is not None:
            price = listed.models.get(model or "", listed.default_per_gpu_hour)
            if price is not None:
                return price
        return self.models.get(model or "", self.default_per_gpu_hour)

    def per_hour(self, resource: str, model: str | None, placement: Placement = ON_DEMAND_PLACEMENT) -> float:
        """The price of an hour of one ``resource`` on a GPU of ``model`` at ``placement``: the price listed for the
        resource (any node); else, for a MIG profile, the parent model's price there times the profile's compute
        fraction; else the model's."""
        listed = self.resources.get(resource)
        if listed is not None:
            return listed
        fraction = self.derived_fraction(resource)
        whole = self.price_for(model, placement)
        return whole * float(fraction) if fraction is not None else whole

    def derived_fraction(self, resource: str) -> Fraction | None:
        """The share of its parent GPU's price a resource is priced at, when the policy lists no price for it:
        a MIG profile's compute fraction (``nvidia.com/mig-3g.40gb``: 3/7); None for a listed or any other resource."""
        if resource in self.resources:
            return None
        profile = mig_profile(resource)
        return profile.compute_fraction if profile is not None else None


def _cron(value: Any) -> Any:
    """Checked with APScheduler's own parser, the one ``run`` uses: what passes here cannot crash start-up."""
    if not isinstance(value, str):
        return value  # pydantic's str check names the type
    if len(value.split()) != 5:
        raise ValueError(f"'{value}' is not a cron expression (five fields: minute hour day month weekday)")
    try:
        CronTrigger.from_crontab(value, timezone="UTC")
    except ValueError as error:
        raise ValueError(f"'{value}' is not a valid cron expression ({error})") from None
    return value


Cron = Annotated[str, BeforeValidator(_cron)]


class Schedules(_Frozen):
    """When the scheduled jobs run: cron expressions in ``timezone`` (an IANA name)."""

    timezone: str = Field(default="UTC", description="IANA name; days and months of digests and budgets are calendar days here.")
    ledger: Cron = Field(
        default="20 0 * * *",
        description=(
            "The cost ledger records each finished day soon after it ends (the Prometheus work of the day),"
            " so the digest, budgets and exports read the database only."
        ),
    )
    digest: Cron = Field(default="0 9 * * *", description="The daily cost digest, about yesterday.")
    budget_warnings: Cron = Field(default="5 * * * *", description="Budget warnings (hourly).")
    monthly_close: Cron = Field(
        default="0 8 1-7 * *",
        description=(
            "The monthly close by mail (each team's final figures of the month just ended, to its budget.mail):"
            " sent by the first run after the month ends (the 1st, after the ledger's run); the later runs send only"
            " a close an earlier run could not (the bot down, the month's metrics not all recorded)."
        ),
    )
    idle_nudges: Cron = Field(default="*/30 * * * *", description="Nudges about idle GPUs.")
    blocked_workloads: Cron = Field(
        default="*/5 * * * *", description="Checks for workloads the quota refuses or the scheduler cannot place."
    )
    proposals: Cron | None = Field(
        default=None,
        description="Proposed shifts from the last 14 days, to the admin channel (needs admin_channel and PROMETHEUS_URL): off unless set.",
    )
    doctor: Cron | None = Field(
        default=None,
        description=(
            "The GPU stack's checklist (as /gpu-quota doctor), posting to the admin channel only the checks broken"
            " since its last run (needs admin_channel), e.g. weekly: 0 8 * * 1. Off unless set."
        ),
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"'{name}' is not an IANA time zone (e.g. Europe/Berlin, America/New_York)") from None
        return name

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class Cluster(_Frozen):
    """One cluster the bot governs namespaces in, and how to reach it."""

    context: str | None = Field(
        default=None,
        description=(
            "The kubeconfig context that reaches it (in KUBECONFIG or ~/.kube/config); unset: the in-cluster"
            " identity, for the home cluster only."
        ),
    )
    home: bool = Field(
        default=False,
        description="The home cluster: its namespaces are written without the cluster (name, not cluster/name). Exactly one.",
    )
    prometheus_url: str | None = Field(
        default=None,
        description="Its own Prometheus; unset: PROMETHEUS_URL, its series told apart by metrics.cluster_label.",
    )
    metrics_name: str | None = Field(
        default=None, description="Its value of metrics.cluster_label in a shared Prometheus, Thanos or Mimir; unset: its name."
    )
    timeout_seconds: float = Field(
        default=20.0, gt=0, le=300, description="How long one call to it may take before it counts as not answering."
    )


class KarmadaPlaneAccess(_Frozen):
    """How to reach the Karmada control plane."""

    context: str = Field(description="The kubeconfig context of the Karmada API server (in KUBECONFIG or ~/.kube/config).")
    timeout_seconds: float = Field(default=20.0, gt=0, le=300, description="How long one call to it may take.")


class Metrics(_Frozen):
    """How GPU usage is read from Prometheus."""

    sample_interval: Duration = Field(
        default=timedelta(seconds=30),
        description=(
            "The scrape interval of kube-state-metrics and the DCGM exporter. The bot measures each exporter's"
            " real sample spacing from Prometheus; this is the fallback, and check-config says when they differ."
        ),
    )
    idle_threshold_percent: float = Field(
        default=5.0,
        ge=0,
        le=100,
        description="A GPU sample under this utilisation is idle (idle GPU-hours count samples, not daily averages).",
    )
    idle_window: Duration = Field(default=timedelta(hours=6), description="Nudge a namespace whose GPUs stayed idle this long.")
    team_label: str | None = Field(
        default=None,
        description="kube_namespace_labels label naming a namespace's team, e.g. team (gives unmanaged namespaces a team in the summary).",
    )
    cost_center_label: str | None = Field(
        default=None,
        description="The label naming a namespace's cost center in the ledger export (cost export), e.g. cost-center.",
    )
    cluster_label: str = Field(
        default="cluster",
        pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$",
        description=(
            "The label that tells clusters' series apart in a Prometheus, Thanos or Mimir several clusters share"
            " (its value: clusters.<name>.metrics_name, else the name). A series without it is taken by its"
            " OpenCost cluster_id; one with neither counts for the home cluster when it shares that Prometheus."
        ),
    )


class Defaults(_Frozen):
    """Settings of every managed namespace and request, unless a namespace overrides them."""

    quota_name: str = Field(
        default="compute-quota", description="The ResourceQuota the bot edits in each namespace (created if missing)."
    )
    pending_timeout: Duration = Field(default=timedelta(hours=24), description="Undecided requests expire after this.")
    reminder_before: Duration = Field(
        default=timedelta(hours=1),
        description="Requesters are reminded (with Extend / Release buttons) this long before a grant ends.",
    )
    default_quota: int = Field(
        default=0, ge=0, description="The quota of each governed resource of a managed namespace that has no quota yet."
    )


class ShiftApproval(StrEnum):
    EACH_TEAM = "each_team"  # one approver of the source team and one of the target team
    ADMIN = "admin"  # one admin


class Shifts(_Frozen):
    """How a shift (GPUs moved from one namespace to another) is approved, and where its card goes."""

    approval: ShiftApproval = Field(
        default=ShiftApproval.EACH_TEAM,
        description="each_team: one approver of the source team and one of the target team; admin: one admin.",
    )
    channel: str | None = Field(
        default=None,
        description=(
            "One channel for the card; unset: the target team's channel, with a copy and the buttons in the"
            " source team's channel (approval admin: the admin channel)."
        ),
    )


KARMADA_PLANE = "karmada"  # the one Karmada plane a policy names (``karmada:``)


class Policy(_Frozen):
    """The whole policy file."""

    language: SpokenLanguage = Field(
        default=Language.EN,
        description="The bot's language where no team's applies (en or zh-CN): the admin channel, and teams without one.",
    )
    defaults: Defaults = Field(default=Defaults(), description="Settings of every managed namespace and request.")
    pricing: Pricing = Field(default=Pricing(), description="The cost shown on requests and in digests.")
    schedules: Schedules = Field(default=Schedules(), description="When the scheduled jobs run.")
    metrics: Metrics = Field(default=Metrics(), description="How GPU use is read from Prometheus (PROMETHEUS_URL).")
    admins: People = Field(
        default=People(), description="May decide for every team, retry failed applies, see every audit trail."
    )
    admin_channel: str | None = Field(
        default=None, description="Organisation-wide notices (hand edits adopted, digests, proposals); unset: none."
    )
    shifts: Shifts = Field(default=Shifts(), description="How a shift is approved, and where its card goes.")
    karmada: KarmadaPlaneAccess | None = Field(
        default=None, description="The Karmada control plane, for resources kept in a FederatedResourceQuota; unset: none."
    )
    clusters: dict[str, Cluster] = Field(
        default={},
        description=(
            "The clusters, by name (eu-1, us-2, ...); a namespace is then written name (home cluster) or"
            " cluster/name. Unset: one cluster, as before."
        ),
    )
    teams: dict[str, Team] = Field(description="The teams, by id: the namespaces they own, who requests and who approves.")

    @field_validator("teams", mode="before")
    @classmethod
    def _name_teams(cls, teams: Any) -> Any:
        if isinstance(teams, dict):
            return {key: {**value, "name": key} if isinstance(value, dict) else value for key, value in teams.items()}
        return teams

    @model_validator(mode="after")
    def _clusters_known(self) -> Policy:
        """Cluster names are labels; one is home; a namespace names a cluster of ``clusters`` other than home."""
        bad = [name for name in self.clusters if not is_label(name)]
        if bad:
            raise ValueError(f"cluster names are lower-case DNS labels: {', '.join(bad)}")
        homes = [name for name, cluster in self.clusters.items() if cluster.home or len(self.clusters) == 1]
        if self.clusters and len(homes) != 1:
            raise ValueError(f"exactly one cluster is home (home: true); found {', '.join(homes) or 'none'}")
        for name, cluster in self.clusters.items():
            if cluster.context is None and name not in homes:
                raise ValueError(f"cluster {name} needs a context: only the home cluster may use the in-cluster identity")
        for team in self.teams.values():
            for namespace in team.namespaces:
                where = cluster_of(namespace.name)
                if where == HOME:
                    continue
                if where in homes:
                    raise ValueError(f"{namespace.name}: {where} is the home cluster, write {split_key(namespace.name)[1]}")
                if where not in self.clusters:
                    known = ", ".join(self.clusters) or "none (no clusters: key)"
                    raise ValueError(f"{namespace.name}: no cluster {where} in clusters (known: {known})")
        return self

    @model_validator(mode="after")
    def _metrics_names_unique(self) -> Policy:
        """Two clusters with one value of the cluster label could not be told apart in a shared Prometheus."""
        seen: dict[str, str] = {}
        for name in sorted(self.clusters):
            value = self.metrics_name(name)
            if value in seen:
                raise ValueError(f"clusters {seen[value]} and {name} have the same metrics name {value}")
            seen[value] = name
        return self

    @model_validator(mode="after")
    def _federation_has_a_plane(self) -> Policy:
        if self.karmada is None and any(
            entry.federated_quota is not None
            for team in self.teams.values()
            for entry in (*team.resources, *(r for ns in team.namespaces for r in ns.resources or ()))
        ):
            raise ValueError("a resource kept in a federated_quota needs karmada: {context: ...}")
        return self

    @model_validator(mode="after")
    def _namespaces_unique(self) -> Policy:
        seen: dict[str, str] = {}
        for team in self.teams.values():
            for namespace in team.namespaces:
                if namespace.name in seen:
                    raise ValueError(f"namespace {namespace.name} belongs to both {seen[namespace.name]} and {team.name}")
                seen[namespace.name] = team.name
        return self

    @model_validator(mode="after")
    def _one_namespace_per_queue(self) -> Policy:
        """The bot keeps one base quota per namespace and resource: a ClusterQueue's flavor of a resource
        shared by two namespaces would be raised by one's grant and lowered by the other's revert."""
        served: dict[tuple[str, str, str], str] = {}
        for namespace, resource, queue in self.cluster_queues():
            key = (queue.name, queue.flavor, resource)
            if key in served:
                raise ValueError(
                    f"the ClusterQueue {queue.name} (flavor {queue.flavor}, {resource}) serves both {served[key]} and"
                    f" {namespace}: the bot keeps one base quota per namespace and resource, so each ClusterQueue,"
                    " flavor and resource may serve one namespace (a team's resources apply to each of its namespaces:"
                    " set cluster_queue in the namespace's own resources)"
                )
            served[key] = namespace
        return self

    @model_validator(mode="after")
    def _proposals_have_a_channel(self) -> Policy:
        if self.schedules.proposals and not self.admin_channel:
            raise ValueError("schedules.proposals posts to the admin channel: set admin_channel")
        if self.schedules.doctor and not self.admin_channel:
            raise ValueError("schedules.doctor posts to the admin channel: set admin_channel")
        return self

    # --- lookups -----------------------------------------------------------------------------

    def language_of(self, team: Team | None) -> Language:
        """The language of a team's channel messages: its own, else the policy's."""
        return team.language if team is not None and team.language is not None else self.language

    def language_of_channel(self, channel_id: str) -> Language:
        """The language of messages posted in a channel: the team's whose channel it is, else the policy's."""
        team = next((t for t in self.teams.values() if t.channel == channel_id), None)
        return self.language_of(team)

    def team_of(self, namespace: str) -> Team | None:
        for team in self.teams.values():
            if any(ns.name == namespace for ns in team.namespaces):
                return team
        return None

    def namespace(self, name: str) -> ManagedNamespace | None:
        team = self.team_of(name)
        return next(ns for ns in team.namespaces if ns.name == name) if team else None

    def home_cluster(self) -> str:
        """The home cluster's name in the policy ("" without ``clusters:``)."""
        return next((name for name, c in self.clusters.items() if c.home or len(self.clusters) == 1), HOME)

    def cluster_names(self) -> list[str]:
        """Every cluster's part of a key: HOME first, then the others by name."""
        home = self.home_cluster()
        return [HOME, *sorted(name for name in self.clusters if name != home)]

    def cluster_label(self, part: str) -> str:
        """A key's cluster part as people read it: the policy's name (the home cluster's too), or "" with no clusters."""
        return self.home_cluster() if part == HOME else part

    def metrics_name(self, name: str) -> str:
        """The value of ``metrics.cluster_label`` on cluster ``name``'s series in a shared Prometheus."""
        return self.clusters[name].metrics_name or name

    def namespace_key(self, typed: str) -> str | tuple[str, ...]:
        """The managed namespace ``typed`` names: a key as the policy writes it, ``home/name`` for the home
        cluster's, or a bare name that one cluster alone has. Else the candidates (none: not managed)."""
        managed = self.managed_namespaces()
        cluster, name = split_key(typed)
        if cluster and cluster == self.home_cluster():
            typed = name
        if typed in managed:
            same = [key for key in managed if split_key(key)[1] == typed and key != typed]
            return typed if cluster or not same else tuple(sorted([typed, *same]))
        candidates = tuple(key for key in managed if not cluster and split_key(key)[1] == typed)
        return candidates[0] if len(candidates) == 1 else candidates

    def managed_namespaces(self) -> list[str]:
        return sorted(ns.name for team in self.teams.values() for ns in team.namespaces)

    def governed_scopes(self) -> list[QuotaScope]:
        """Every governed resource of every managed namespace, by namespace."""
        return [
            QuotaScope(namespace, resource)
            for namespace in self.managed_namespaces()
            for resource in self.governed_resources(namespace)
        ]

    def quota_name(self, namespace: str) -> str:
        managed = self.namespace(namespace)
        return (managed.quota_name if managed else None) or self.defaults.quota_name

    def default_quota(self, namespace: str, resource: str = GPU) -> int:
        """The quota of ``resource`` when the cluster has none: the resource's, else the namespace's, else the defaults'."""
        governed = self.governed(namespace, resource)
        if governed is not None and governed.default_quota is not None:
            return governed.default_quota
        managed = self.namespace(namespace)
        if managed and managed.default_quota is not None:
            return managed.default_quota
        return self.defaults.default_quota

    def governed_resources(self, namespace: str) -> tuple[str, ...]:
        """The resources the namespace's quota governs, in policy order (empty for an unmanaged namespace)."""
        return tuple(resource.name for resource in self._resources_of(namespace))

    def governed(self, namespace: str, resource: str) -> GovernedResource | None:
        """The policy entry of ``resource`` in the namespace; None when the namespace does not govern it."""
        return next((entry for entry in self._resources_of(namespace) if entry.name == resource), None)

    def federated_quota(self, namespace: str, resource: str = GPU) -> FederatedQuotaRef | None:
        """The Karmada FederatedResourceQuota that keeps the namespace's quota of ``resource``: its name and the
        member cluster whose assignment the bot changes; None: not federated."""
        governed = self.governed(namespace, resource)
        if governed is None or governed.federated_quota is None:
            return None
        member = governed.federated_quota.member or self.cluster_label(cluster_of(namespace))
        return FederatedQuotaRef(governed.federated_quota.name, member, KARMADA_PLANE)

    def cluster_queue(self, namespace: str, resource: str = GPU) -> ClusterQueueRef | None:
        """The Kueue ClusterQueue that keeps the namespace's quota of ``resource``; None: its ResourceQuota."""
        governed = self.governed(namespace, resource)
        return governed.cluster_queue if governed else None

    def all_governed_resources(self) -> tuple[str, ...]:
        """Every resource some managed namespace governs, sorted (what the Prometheus queries select)."""
        return tuple(sorted({name for ns in self.managed_namespaces() for name in self.governed_resources(ns)}))

    def cluster_queues(self) -> list[tuple[str, str, ClusterQueueRef]]:
        """(namespace, resource, ClusterQueue) for every resource kept in Kueue, by namespace then policy order."""
        return [
            (namespace, entry.name, entry.cluster_queue)
            for namespace in self.managed_namespaces()
            for entry in self._resources_of(namespace)
            if entry.cluster_queue is not None
        ]

    def _resources_of(self, namespace: str) -> tuple[GovernedResource, ...]:
        team, managed = self.team_of(namespace), self.namespace(namespace)
        if team is None or managed is None:
            return ()
        return managed.resources if managed.resources is not None else team.resources

    def borrowed_priority_classes(self, namespace: str) -> tuple[str, ...]:
        """The PriorityClasses the namespace's temporary grants are meant for (the namespace's list, else its team's)."""
        managed = self.namespace(namespace)
        if managed is not None and managed.borrowed_priority_classes is not None:
            return managed.borrowed_priority_classes
        team = self.team_of(namespace)
        return team.borrowed_priority_classes if team else ()

    def max_gpus(self, namespace: str, resource: str = GPU) -> int:
        """The most of ``resource`` the namespace may hold: the resource's max_gpus, else the namespace's, else the team's."""
        governed = self.governed(namespace, resource)
        if governed is not None and governed.max_gpus is not None:
            return governed.max_gpus
        team = self.team_of(namespace)
        managed = self.namespace(namespace)
        if managed and managed.max_gpus is not None:
            return managed.max_gpus
        return team.limits.max_gpus_per_namespace if team else 0


class PolicyError(Exception):
    """The policy file is missing, not YAML, or does not validate; the message names each problem."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader refusing a mapping that names a key twice (two clusters or teams of one name):
    plain YAML keeps the last one silently."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"'{key}' is named twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_policy(path: Path) -> Policy:
    """Read and validate the policy file; raises PolicyError with one line per problem."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except OSError as error:
        raise PolicyError(f"{path}: cannot read the policy file ({error.strerror})") from error
    except yaml.YAMLError as error:
        raise PolicyError(f"{path}: not valid YAML ({error})") from error
    return parse_policy(raw, source=str(path))


def parse_policy(raw: Any, *, source: str = "policy") -> Policy:
    if not isinstance(raw, dict):
        raise PolicyError(f"{source}: the policy must be a YAML mapping with a 'teams' key")
    try:
        return Policy.model_validate(raw)
    except ValidationError as error:
        lines = [f"{source}: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()]
        raise PolicyError("\n".join(lines)) from error


# --- pure decisions --------------------------------------------------------------------------


def approvals_required(team: Team, *, delta: int, permanent: bool, over_budget: bool = False) -> int:
    """How many distinct approvers a request needs."""
    rules = team.approvals
    required = rules.permanent if permanent else rules.temporary
    if rules.large_change and abs(delta) > rules.large_change.above_gpus:
        required = max(required, rules.large_change.required)
    if over_budget and delta > 0:
        required += rules.over_budget_extra
    return required


def limit_problems(
    policy: Policy, namespace: str, *, current: int, delta: int, duration: timedelta | None, resource: str = GPU
) -> list[str]:
    """Why a change of ``delta`` to a quota of ``current`` of ``resource`` breaks the team's limits (empty: it doesn't)."""
    team = policy.team_of(namespace)
    assert team is not None, "limit_problems needs a managed namespace"
    governed = policy.governed_resources(namespace)
    if resource not in governed:
        return [f"{namespace} does not govern {resource}; it governs {', '.join(governed)}"]
    problems = []
    target = current + delta
    if delta == 0:
        problems.append(f"{namespace} already has {_amount(current, resource)}: nothing to change")
    if target < 0:
        problems.append(f"{namespace} has {_amount(current, resource)}: it cannot go down by {-delta}")
    max_gpus = policy.max_gpus(namespace, resource)
    if delta > 0 and target > max_gpus:
        problems.append(f"{namespace} may hold at most {_amount(max_gpus, resource)}; {current} {delta:+d} = {target}")
    if duration is not None and duration > team.limits.max_duration:
        problems.append(
            f"{team.label} may borrow GPUs for at most {format_duration(team.limits.max_duration)}"
            f" (asked for {format_duration(duration)})"
        )
    return problems


def _amount(n: int, resource: str) -> str:
    """``4 GPUs`` for whole GPUs, ``4 mig-3g.40gb`` for any other resource."""
    return gpu_count(n) if resource == GPU else f"{n} {short_name(resource)}"


@dataclass(frozen=True)
class AutoApprovalCheck:
    """What the auto-approval rule is decided on; the service reads it in the transaction that records the request."""

    gpus: int  # GPUs the request adds; for an extension, the GPUs of the grant it extends
    grant_length: timedelta | None  # the whole grant (an extension: the grant so far plus the extension); None: permanent
    gpu_hours: float  # GPU-hours this request grants
    active_auto_gpus: int  # the namespace's GPUs already granted or extended by auto-approval and still active
    auto_gpu_hours_today: float  # the team's auto-approved GPU-hours of today (schedules.timezone)
    over_budget: bool  # the same signal that asks for one more approval
    within_capacity: bool  # the cluster's allocatable GPUs cover all managed quotas after the change
    resource: str = GPU  # what ``gpus`` counts (a request changes one resource)


@dataclass(frozen=True)
class AutoApproval:
    approved: bool
    note: AutoApprovalNote  # which rule allowed it, or what kept it for a person: on the card and in the audit trail


def auto_approval(team: Team, check: AutoApprovalCheck) -> AutoApproval | None:
    """Whether the bot approves a temporary increase alone (None: no rule, or a permanent change or a decrease).

    Cumulative, not per request: the namespace's auto-approved GPUs stay within ``max_gpus`` and the
    team's auto-approved GPU-hours of a day within ``max_gpu_hours_per_day``, so splitting a large
    request into small ones gains nothing.
    """
    rule = team.auto_approve
    if rule is None or check.grant_length is None or check.gpus <= 0:
        return None  # only temporary increases are ever auto-approved
    problem = _auto_problem(rule, check)
    note = AutoApprovalNote(
        approved=problem is None,
        refused=problem,
        gpus=check.gpus,
        grant_seconds=int(check.grant_length.total_seconds()),
        active_gpus=check.active_auto_gpus,
        gpu_hours_today=check.auto_gpu_hours_today + check.gpu_hours,
        max_gpus=rule.max_gpus,
        max_seconds=int(rule.max_duration.total_seconds()),
        max_gpu_hours_per_day=rule.max_gpu_hours_per_day,
        resource=check.resource,
    )
    return AutoApproval(problem is None, note)


def _auto_problem(rule: AutoApprove, check: AutoApprovalCheck) -> AutoRefusal | None:
    assert check.grant_length is not None
    if check.over_budget:
        return AutoRefusal.OVER_BUDGET
    if check.active_auto_gpus + check.gpus > rule.max_gpus:
        return AutoRefusal.MORE_THAN_MAX if check.active_auto_gpus == 0 else AutoRefusal.TOO_MANY_ACTIVE
    if check.grant_length > rule.max_duration:
        return AutoRefusal.TOO_LONG
    cap = rule.max_gpu_hours_per_day
    if cap is not None and check.auto_gpu_hours_today + check.gpu_hours > cap + 1e-9:
        return AutoRefusal.DAILY_CAP
    if not check.within_capacity:
        return AutoRefusal.CAPACITY
    return None


def gpu_count(n: int) -> str:
    return f"{n} GPU" if abs(n) == 1 else f"{n} GPUs"


def needs_confirmation(team: Team, *, delta: int, permanent: bool) -> bool:
    """Approving a permanent change or a large one (``approvals.large_change``) takes a confirmation form, not one click."""
    large = team.approvals.large_change
    return permanent or (large is not None and abs(delta) > large.above_gpus)
