"""The database's ports, one per aggregate, each a handful of methods typed in the domain's entities.

``bot.services.ports.Repository`` is all of them: what one transaction (``Transactions.run``) offers.
A service or a helper that needs one aggregate names that port only; a fake implements only what it
is used for. Every method raises only the errors of ``bot.errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Protocol

from bot.domain.clusters import HOME
from bot.domain.entities import Grant, Namespace, Request
from bot.domain.lifecycle import GrantState, RequestState, Verdict
from bot.domain.records import AuditEntry, HomeTab, IdleNudge, MetricsOutage, Reclaim, TeamSpend
from bot.domain.resources import GPU


class Requests(Protocol):
    """Requests and their decisions (a request's grant is in ``Grants``). Entities it returns may be
    changed in place until the transaction ends."""

    def add_request(self, **fields: Any) -> Request:
        """A new request with these column values, with its id assigned."""
        ...

    def add_decision(self, request: Request, *, user_id: str, verdict: Verdict, decided_at: datetime) -> None: ...

    def request(self, request_id: int) -> Request | None: ...

    def request_at(self, channel_id: str, message_ts: str) -> Request | None: ...

    def requests_in(self, states: Iterable[RequestState], *, namespaces: Iterable[str] | None = None) -> Sequence[Request]: ...

    def count_requests_by_state(self) -> dict[str, int]: ...


class RequestsDue(Protocol):
    """The requests the scheduled jobs pick up: past their deadline, left unapplied, or holding a shift's source."""

    def pending_past_deadline(self, now: datetime) -> Sequence[Request]: ...

    def approved_unleased(self, now: datetime) -> Sequence[Request]: ...

    def failed_shifts_holding_source(self) -> Sequence[Request]:
        """Temporary shifts whose target side failed while their source stays lowered."""
        ...

    def shift_sources_in_flight(self) -> dict[tuple[str, str], int]:
        """(source namespace, resource) of approved shifts whose decrease is recorded but not yet applied, with the shift's id."""
        ...


class Cards(Protocol):
    """Where a request's message (and a shift's copy for its source team) is in Slack, and who may post it."""

    def set_message_ref(self, request_id: int, *, channel_id: str, ts: str) -> bool:
        """Where the request's message is in Slack, written without reading the row (its version bumped) and
        its post claim ended; False (nothing written) when a message is stored already."""
        ...

    def claim_post(self, request_id: int, *, copy: bool, now: datetime, until: datetime) -> bool:
        """Hold the right to post the request's card (``copy``: a shift's copy, once the card is posted)
        until ``until``; False when it is posted, or claimed (or waiting for Slack) past ``now``."""
        ...

    def release_post(self, request_id: int, *, copy: bool, held: datetime, not_before: datetime) -> None:
        """End the post claim ``held`` (its end, as claimed) that did not post: nobody posts it again before
        ``not_before``. A claim someone else took since (``held`` lapsed) is theirs and stays."""
        ...

    def unposted_requests(self, now: datetime) -> Sequence[int]:
        """Requests without a message in Slack that nobody is posting (nor waiting for Slack) at ``now``."""
        ...

    def unposted_copies(self, now: datetime) -> Sequence[int]:
        """Pending shifts whose card is posted but whose copy for the source team is not (nor given up),
        and that nobody is posting (nor waiting for Slack) at ``now``."""
        ...

    def set_copy_ref(self, request_id: int, *, ts: str) -> bool:
        """Where the copy of a shift's card is (``""``: refused by Slack, given up), its claim ended; False
        (nothing written) when one is stored already."""
        ...


class AutoApprovals(Protocol):
    """What auto-approval has given a team or a namespace, counted under a lock per team."""

    def lock_auto_approval(self, team: str) -> None:
        """Serialise the team's auto-approval decisions until the transaction ends; call it before reading."""
        ...

    def auto_approved_sizes_since(self, team: str, resource: str, start: datetime, end: datetime) -> list[tuple[int, int | None]]:
        """(delta, duration_seconds) of the team's auto-approved requests of ``resource`` created in [start, end)
        that took effect or are taking it (the daily cap counts hours of one resource: slices are not GPUs)."""
        ...

    def auto_approved_gpus(self, namespace: str, resource: str, *, excluding_request: int | None = None) -> int: ...


class Grants(Protocol):
    """The temporary parts of applied requests."""

    def add_grant(
        self,
        *,
        request_id: int,
        namespace: str,
        resource: str,
        gpus: int,
        state: GrantState,
        starts_at: datetime,
        ends_at: datetime,
    ) -> Grant: ...

    def grant(self, grant_id: int) -> Grant | None: ...

    def grant_of(self, request_id: int) -> Grant | None: ...

    def grants(self, *, states: Iterable[GrantState], namespaces: Iterable[str] | None = None) -> Sequence[Grant]: ...

    def grants_due(self, now: datetime) -> Sequence[Grant]: ...

    def grants_to_remind(self, horizon: datetime) -> Sequence[Grant]: ...

    def active_grant_total(self, namespace: str, resource: str) -> int: ...

    def remove_grant(self, grant: Grant) -> None: ...


class Namespaces(Protocol):
    """The quota state of the managed namespaces."""

    def namespace(self, name: str, resource: str) -> Namespace | None: ...

    def namespace_known(self, name: str, resource: str) -> bool:
        """Whether the bot has a row for ``name`` and ``resource`` (``namespace(...) is not None``, without loading it)."""
        ...

    def add_namespace(
        self,
        *,
        name: str,
        resource: str,
        team: str,
        base_gpus: int,
        last_seen_gpus: int | None,
        seen_resource_version: str | None,
        updated_at: datetime,
    ) -> Namespace: ...

    def namespaces(self, names: Iterable[str]) -> Sequence[Namespace]:
        """The rows of these namespaces, every governed resource of each."""
        ...


class AuditTrail(Protocol):
    """The append-only audit trail."""

    def record(
        self,
        *,
        at: datetime,
        action: str,
        actor: str = ...,
        namespace: str | None = None,
        request_id: int | None = None,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        detail: str = "",
    ) -> None:
        """Append to the audit trail (``actor`` defaults to the bot)."""
        ...

    def audit_trail(
        self, *, namespace: str | None = None, request_id: int | None = None, limit: int = 20
    ) -> Sequence[AuditEntry]: ...

    def latest_audit_id(self, *, namespaces: Iterable[str], requester: str | None = None) -> int: ...


class OutboxRecords(Protocol):
    """What the bot means to say, recorded in the transaction that decided it (delivered by ``Outbox``)."""

    def add_outbox_entry(
        self,
        *,
        stream: str,
        kind: str,
        now: datetime,
        request_id: int | None = None,
        target: str | None = None,
        notice: dict[str, Any] | list[dict[str, str]] | None = None,
        actions: list[dict[str, Any]] | None = None,
        latest_only: bool = False,
    ) -> None:
        """Record an outbox entry in this transaction: it exists if and only if the transaction commits.
        ``notice``: the typed message as JSON (``bot.services.messages.to_json``).
        ``latest_only``: skip it when an unclaimed entry of the stream is already waiting (a card update
        renders the request as it is at delivery, so one waiting is enough)."""
        ...

    def outbox_streams_pending(self, streams: Sequence[str]) -> list[str]:
        """Those of ``streams`` with an undelivered outbox entry, in the order given."""
        ...


class SlackEvents(Protocol):
    """Events API deliveries already handled (Slack re-sends what it thinks was missed)."""

    def claim_event(self, event_id: str, *, at: datetime) -> bool:
        """Record an Events API delivery; False when it was recorded before."""
        ...

    def forget_events_before(self, moment: datetime) -> None: ...


class HomeTabs(Protocol):
    """The people whose App Home the bot keeps published."""

    def home_tabs(self) -> Sequence[HomeTab]: ...

    def save_home_tab(self, user_id: str, *, at: datetime, last_audit_id: int) -> None: ...


class BlockedAlerts(Protocol):
    """Workloads the quota kept from starting, told once, and counted per namespace and day."""

    def blocked_alerted(self, key: str) -> bool: ...

    def remember_blocked_alert(self, key: str, *, namespace: str, at: datetime, quota_day: date | None = None) -> None:
        """Remember the alert; a quota alert (``quota_day`` given, schedules.timezone) also counts in the
        namespace's workloads blocked by the quota that day."""
        ...

    def quota_blocks(self, first: date, last: date) -> dict[str, int]:
        """Workloads blocked by the GPU quota per namespace over the days [first, last]."""
        ...


class Budgets(Protocol):
    """The teams' measured spend and the budget warnings claimed for them."""

    def team_spend(self, teams: Iterable[str]) -> Sequence[TeamSpend]: ...

    def team_over_budget(self, team: str, month: str) -> bool:
        """Whether the last measurement of ``month`` (``YYYY-MM``) found ``team`` at or over its budget."""
        ...

    def record_team_spend(self, team: str, *, month: str, spent: float, budget: float, forecast: float, at: datetime) -> None:
        """Keep the team's latest month-to-date measurement."""
        ...

    def budget_alerts_sent(self, team: str, month: str) -> set[str]: ...

    def claim_budget_alerts(self, team: str, month: str, keys: Iterable[str], *, percent: float, at: datetime) -> bool:
        """Record these warnings, all or none; False (nothing recorded) when any was recorded before."""
        ...


class Digests(Protocol):
    """The daily digests, claimed per scope and day before they are posted."""

    def digest_days_posted(self, scope: str, *, first: date, last: date) -> set[date]: ...

    def claim_digest(self, scope: str, day: date, *, at: datetime) -> bool:
        """Claim the (scope, day) digest before posting it; False when it was claimed before."""
        ...

    def release_digest(self, scope: str, day: date) -> None: ...

    def mark_digest_posted(self, scope: str, day: date, *, at: datetime) -> None: ...


class IdleNudges(Protocol):
    """The idle-GPU nudges of the namespaces."""

    def idle_nudge(self, namespace: str) -> IdleNudge | None: ...

    def snooze_idle_nudges(self, namespace: str, *, until: datetime, by: str) -> None: ...

    def remember_idle_nudge(self, namespace: str, *, gpus: float, at: datetime) -> None:
        """The namespace was nudged about ``gpus`` idle GPUs: an idle episode is on."""
        ...


class MetricsOutages(Protocol):
    """Times Prometheus could not be read."""

    def open_metrics_outage(self) -> MetricsOutage | None:
        """The oldest Prometheus outage not yet over."""
        ...

    def start_metrics_outage(self, *, at: datetime, cause: str) -> MetricsOutage:
        """A new open outage, with its id assigned."""
        ...


class DoctorRuns(Protocol):
    """What the weekly doctor run found last time: each check's status by its key (``CheckResult.key``)."""

    def doctor_statuses(self) -> dict[str, str]: ...

    def remember_doctor_statuses(self, statuses: Mapping[str, str], *, at: datetime) -> None:
        """Replace what is remembered with ``statuses``."""
        ...


class Reclaims(Protocol):
    """Quotas lowered below usage, followed until usage is within them."""

    def open_reclaim(self, namespace: str, resource: str) -> Reclaim | None: ...

    def open_reclaims(self) -> Sequence[Reclaim]: ...

    def start_reclaim(
        self, *, namespace: str, resource: str, request_id: int | None, quota: int, used: int, at: datetime
    ) -> Reclaim: ...

    def finish_reclaim(self, reclaim_id: int, *, used: int, at: datetime) -> bool:
        """Close an open reclaim; False when it was closed already (by another replica)."""
        ...


class LedgerDays(Protocol):
    """The days of the cost ledger: which are recorded, each replaced whole."""

    def latest_ledger_day(self) -> date | None: ...

    def replace_ledger_day(
        self,
        day: date,
        *,
        cluster: str = HOME,
        status: str,
        recorded_at: datetime,
        ksm_spacing: float | None,
        dcgm_spacing: float | None,
        entries: Iterable[Mapping[str, Any]],
        split: str | None = None,
    ) -> None:
        """The day's ledger rows of ``cluster`` (the namespace keys' cluster part) replaced whole by ``entries``
        (column values), and its status for that cluster (``split``: whether its hours were told apart by node)."""
        ...

    def ledger_status(self, first: date, last: date) -> list[tuple[date, str, str]]:
        """(day, cluster, status) of the days recorded for each cluster in [first, last]."""
        ...

    def ledger_splits(self, first: date, last: date) -> list[tuple[date, str, str | None]]:
        """(day, cluster, split state or None) of the days recorded with data for each cluster in [first, last]."""
        ...


class LedgerReads(Protocol):
    """The cost ledger's entries, read plain or summed in the database."""

    def ledger_entries(self, first: date, last: date) -> list[tuple[Any, ...]]:
        """Plain column tuples (day, namespace, team, cost_center, model, allocated_hours, idle_hours,
        observed_hours, util_hours, price, cost, idle_cost, resource, capacity_type, pool), by day, namespace,
        resource, model and placement."""
        ...

    def ledger_costs(
        self, first: date, last: date, *, namespaces: Iterable[str] | None = None
    ) -> list[tuple[date, str, str, float | None]]:
        """(day, namespace, recorded team, summed cost) of the entries in [first, last] (of ``namespaces`` when given)."""
        ...

    def ledger_team_costs(self, first: date, last: date) -> list[tuple[date, str, float]]:
        """(day, recorded team, summed cost) of [first, last], grouped in the database."""
        ...

    def ledger_namespace_teams(self, first: date, last: date) -> list[tuple[str, str]]:
        """The distinct (namespace, recorded team) pairs of [first, last]."""
        ...

    def ledger_sums(self, first: date, last: date) -> list[tuple[Any, ...]]:
        """(namespace, team, model, allocated_hours, idle_hours, observed_hours, util_hours, cost, idle_cost,
        last day, resource, capacity_type, pool) summed over [first, last] per namespace, recorded team, resource,
        model and placement, in the database."""
        ...

    def ledger_model_hours(self, namespace: str, first: date, last: date, *, resource: str = GPU) -> dict[str, float]:
        """The hours of ``resource`` (whole GPUs: GPU-hours) ``namespace`` had per GPU model over [first, last]."""
        ...

    def ledger_placement_hours(
        self, namespace: str, first: date, last: date, *, resource: str = GPU
    ) -> dict[tuple[str, str, str], float]:
        """The hours of ``resource`` ``namespace`` had per (GPU model, capacity type, pool) over [first, last]."""
        ...
