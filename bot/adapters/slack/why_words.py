"""The words of ``/gpu-quota why``: an answer as Block Kit (cause first, its evidence, its fix, the [Request +N]
button, the scheduler's words quoted), and the pick-a-pod form.

Everything that comes from a cluster (pod, node, label, taint and queue names, the scheduler's and Kueue's
messages, which anyone who can create a pod or an event can shape) goes through ``mrkdwn.escape`` (``_code``,
``_quote``) before it enters a mrkdwn text object.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from slack_sdk.models.blocks import ContextBlock, InputBlock, MarkdownTextObject, Option, SectionBlock, StaticSelectElement
from slack_sdk.models.views import View

from bot.adapters.slack import ids
from bot.adapters.slack.blocks import Block, actions, button, context, section, truncate, when
from bot.adapters.slack.buttons import button_label
from bot.adapters.slack.mrkdwn import escape
from bot.adapters.slack.resources import amount_of, resource_label
from bot.domain.diagnosis import (
    Cause,
    Diagnosis,
    FitsNow,
    Gated,
    Mistake,
    NoCapacity,
    NodesUnavailable,
    NotAdvertised,
    PriorityStanding,
    QueueWait,
    QuotaFull,
    RequestMore,
    ScaleUp,
    Scheduled,
    SelectorMismatch,
    UntoleratedTaint,
)
from bot.domain.priority import NO_CLASS_LABEL
from bot.domain.resources import GPU, short_name
from bot.domain.scheduling import SelectorTerm
from bot.services.why import Check, CouldNotCheck, PickAPod, Unanswered, WhyAnswer, WhyOutcome

MAX_MODAL_BLOCKS = 100
MAX_MESSAGE_BLOCKS = 50
MAX_OPTIONS = 100  # a static_select's options
MAX_OPTION_TEXT = 75
MAX_OPTION_VALUE = 150
_LISTED = 8  # names shown of a longer list
_TERMS = 3  # node affinity terms shown

CHECKS = {
    Check.POD: "the pod",
    Check.PODS: "the namespace's pods",
    Check.NODES: "the nodes",
    Check.EVENTS: "the scheduler's events",
    Check.PRIORITY_CLASSES: "the priority classes",
    Check.HOLDERS: "the pods holding the GPUs",
    Check.AUTOSCALER: "the cluster autoscaler's status",
    Check.QUOTA: "the quota",
    Check.REFUSALS: "the quota's refusals",
    Check.QUEUE: "the Kueue queue",
}


def _code(text: str) -> str:
    return "`" + escape(text).replace("`", "'") + "`"


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in (escape(text).splitlines() or ["(none)"]))


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(_code(n) for n in names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def _request_command(fix: RequestMore) -> str:
    word = f" {short_name(fix.resource)}" if fix.resource != GPU else ""
    return _code(f"/gpu-quota request {fix.namespace} +{fix.amount}{word} for <duration> <reason>")


# --- the answer -------------------------------------------------------------------------------------


def why_blocks(outcome: WhyOutcome, *, in_modal: bool = False) -> list[Block]:
    """The answer as blocks; in a modal the fix is the command to type (a button there would open no form)."""
    if isinstance(outcome, WhyAnswer):
        blocks = _answer_blocks(outcome, in_modal=in_modal)
    else:
        blocks = [section(why_text(outcome))]
    limit = MAX_MODAL_BLOCKS if in_modal else MAX_MESSAGE_BLOCKS
    return blocks if len(blocks) <= limit else [*blocks[: limit - 1], context(f"… and {len(blocks) - limit + 1} more")]


def why_text(outcome: WhyOutcome) -> str:
    """The answer as one mrkdwn text: a notification's fallback, and the whole of the short answers."""
    if isinstance(outcome, Unanswered):
        where = _code(f"{outcome.namespace}/{outcome.name}" if outcome.name else outcome.namespace)
        if outcome.problem is None:
            return f":warning: The bot reads no cluster for `why`, so it cannot say why {where} is pending."
        return f":warning: Could not look for {where}: {_unchecked(outcome.problem)}"
    if isinstance(outcome, PickAPod):
        return _pick_text(outcome)
    return _title(outcome)


def _pick_text(pick: PickAPod) -> str:
    lead = (
        f"Nothing is called {_code(pick.missing)} in {_code(pick.namespace)} (no pod, Job, Deployment, StatefulSet or Kueue Workload)."
        if pick.missing
        else ""
    )
    if not pick.pods:
        return f"{lead} No GPU pod is pending in {_code(pick.namespace)}.".strip()
    listed = ", ".join(_code(p.name) for p in pick.pods[:20])
    more = f" and {len(pick.pods) - 20} more" if len(pick.pods) > 20 else ""
    return f"{lead} Pending GPU pods in {_code(pick.namespace)}: {listed}{more}. Ask `/gpu-quota why {escape(pick.namespace)}/<pod>`.".strip()


def _title(answer: WhyAnswer) -> str:
    subject = _code(f"{answer.namespace}/{answer.name}")
    kind = "" if answer.kind == "Pod" else f"{answer.kind} "
    finding = answer.finding
    if isinstance(finding, Scheduled):
        return f"*{kind}{subject}*: not pending."
    if finding.pod is None:
        return f"*Why {kind}{subject} has no pods*"
    pod = f" (its pod {_code(finding.pod)})" if answer.kind != "Pod" else ""
    return f"*Why {kind}{subject} is pending*{pod}"


def _answer_blocks(answer: WhyAnswer, *, in_modal: bool) -> list[Block]:
    blocks = [section(_title(answer))]
    finding = answer.finding
    if isinstance(finding, Scheduled):
        blocks.append(section(_scheduled(finding)))
    else:
        blocks += [section(text) for cause in finding.causes if (text := cause_text(cause, in_modal=in_modal))]
        if not finding.causes:
            blocks.append(section(_nothing_found(answer)))
        if answer.actions and not in_modal:
            blocks.append(
                actions(
                    [button(_button(a.value, button_label(a)), ids.ACTION_IDS[a.kind], a.value, a.style) for a in answer.actions]
                )
            )
        if finding.said is not None:
            said = finding.said
            times = (
                f" ({said.count} times" + (f", last {when(said.last_seen)}" if said.last_seen else "") + ")"
                if said.count > 1
                else ""
            )
            blocks.append(section(f"*The scheduler's words*{times}:\n{_quote(said.message)}"))
    if answer.others_pending:
        more = answer.others_pending
        blocks.append(context(f"{more} more pod{'s' if more != 1 else ''} of {_code(answer.name)} pending; this is its first."))
    notes = [] if isinstance(finding, Scheduled) else finding.notes
    if notes:
        blocks.append(context("Not checked: whether the image has CUDA libraries that match the nodes' driver."))
    blocks += [context(f":warning: Could not check {_unchecked(failed)}") for failed in answer.unchecked]
    return blocks


def _button(value: str, label: str) -> str:
    """``Request +2 GPUs``, ``Request +1 MIG 3g.40gb slice``: what the button asks for (else its label)."""
    try:
        data = json.loads(value)
        amount = int(str(data["gpus"]).lstrip("+"))
        return f"Request +{amount_of(amount, str(data.get('resource') or GPU))}"
    except (ValueError, KeyError, AttributeError, TypeError):
        return label


def _unchecked(failed: CouldNotCheck) -> str:
    grant = f" The bot needs the permission {_code(failed.permission)}." if failed.permission else ""
    return f"{CHECKS[failed.check]}: {escape(failed.problem)}.{grant}"


def _scheduled(found: Scheduled) -> str:
    asks = ", ".join(amount_of(n, r) for r, n in found.asks.items()) or "no GPUs"
    since = f" since {when(found.since)}" if found.since else ""
    if found.phase == "Running":
        return f":white_check_mark: Running on node {_code(found.node)}{since}, with {asks}."
    return f":white_check_mark: Scheduled on node {_code(found.node)}{since} (phase {escape(found.phase)}: its containers are starting), with {asks}."


def _nothing_found(answer: WhyAnswer) -> str:
    finding = answer.finding
    if isinstance(finding, Diagnosis) and finding.pod is None:
        return (
            f"Neither the quota nor Kueue says why {answer.kind} {_code(answer.name)} has no pods: its own events tell "
            f"(`kubectl describe {escape(answer.kind.lower())} {escape(answer.name)} -n <namespace>`)."
        )
    return "No cause found in what the bot could read: the scheduler's words below say what it waits for."


# --- one cause each ---------------------------------------------------------------------------------


def cause_text(cause: Cause, *, in_modal: bool = False) -> str:
    """The cause as mrkdwn: what it is, the evidence, the fix."""
    match cause:
        case NotAdvertised():
            return _not_advertised(cause)
        case QuotaFull():
            return _quota(cause, in_modal)
        case QueueWait():
            return _queue(cause, in_modal)
        case Gated():
            return _gated(cause)
        case SelectorMismatch():
            return _selector(cause)
        case UntoleratedTaint():
            return _taint(cause)
        case NodesUnavailable():
            return _unavailable(cause)
        case NoCapacity():
            return _capacity(cause)
        case PriorityStanding():
            return _priority(cause)
        case FitsNow():
            return _fits(cause)
    raise TypeError(f"no words for {type(cause).__name__}")


def _not_advertised(cause: NotAdvertised) -> str:
    head = f":pencil2: *Spec*: it asks for {_code(cause.resource)}, which no node advertises."
    offered = f" The nodes offer {_names(cause.offered)}." if cause.offered else ""
    fix = "Fix: change the resource in the container's `resources.limits` (and `requests`)"
    if cause.mistake is Mistake.TYPO:
        return f"{head} Did you mean {_code(cause.suggestion or '')}? {fix} to {_code(cause.suggestion or '')}."
    if cause.mistake is Mistake.WHOLE_GPU_ON_MIG:
        return f"{head} The nodes are partitioned into MIG slices only:{offered.removeprefix(' The nodes offer')} {fix} to one of those profiles."
    if cause.mistake is Mistake.MIG_PROFILE:
        close = f" The closest: {_code(cause.suggestion)}." if cause.suggestion else ""
        none = " No node offers MIG slices." if not cause.offered else ""
        return f"{head} No node is partitioned into that MIG profile.{offered}{none}{close} {fix}, or ask an admin for that MIG layout."
    if cause.mistake is Mistake.NO_DEVICE_PLUGIN:
        return (
            f"{head} The cluster has GPU nodes, but none advertises an NVIDIA resource: the NVIDIA device plugin is "
            "probably not running on them. An admin can check with `/gpu-quota doctor`."
        )
    return f"{head}{offered} {fix} to a resource the nodes offer."


def _quota(cause: QuotaFull, in_modal: bool) -> str:
    asks = f"A pod asks {amount_of(cause.asks, cause.resource)}; " if cause.asks else ""
    holders = f" (pods {_names(cause.holders)})" if cause.holders else ""
    fix = cause.fix
    how = f"type {_request_command(fix)}" if in_modal else "press the button below"
    return (
        f":no_entry: *Quota*: {asks}the quota of {_code(cause.namespace)} allows {cause.hard} and {cause.used} are in use{holders}, "
        f"so the pods are not created. {amount_of(fix.amount, cause.resource)} more would let it in: {how} to ask for them."
    )


def _queue(cause: QueueWait, in_modal: bool) -> str:
    quota = (
        f": nominal quota {cause.nominal}, {cause.reserved} reserved by admitted workloads"
        if cause.nominal is not None and cause.reserved is not None
        else ""
    )
    place = (
        f" It is number {cause.position} of {cause.waiting} waiting (by age; Kueue puts higher priorities first)."
        if cause.position
        else ""
    )
    text = (
        f":hourglass_flowing_sand: *Kueue*: the workload {_code(cause.workload)} waits for quota in ClusterQueue "
        f"{_code(cause.cluster_queue)} (flavor {_code(cause.flavor)}, {escape(resource_label(cause.resource))}){quota}.{place}"
    )
    if cause.preemption_pending:
        text += " Kueue is preempting other workloads to make room: it should be admitted when they stop."
    elif cause.fix is not None:
        how = f"type {_request_command(cause.fix)}" if in_modal else "press the button below"
        text += f" {amount_of(cause.fix.amount, cause.resource)} more would admit it: {how} to ask for them."
    return text + (f"\nKueue said:\n{_quote(cause.message)}" if cause.message else "")


def _gated(cause: Gated) -> str:
    kueue = " Kueue removes its gate when it admits the workload." if cause.kueue else " Whatever added them removes them."
    return (
        f":no_entry_sign: *Scheduling gates*: the scheduler does not consider the pod while it has {_names(cause.gates)}.{kueue}"
        " Capacity and priority are not checked until then."
    )


def _requirement_text(term: SelectorTerm) -> str:
    """A term as ``key In (a, b)`` joined by "and", each value list cut after ``_LISTED`` (a pod may pin 150 nodes)."""

    def values(listed: tuple[str, ...]) -> str:
        more = f", {len(listed) - _LISTED} more" if len(listed) > _LISTED else ""
        return ", ".join(listed[:_LISTED]) + more

    return " and ".join(
        f"{r.key} {r.operator} ({values(r.values)})" if r.values else f"{r.key} {r.operator}" for r in term.requirements
    )


def _selector(cause: SelectorMismatch) -> str:
    wanted = [_code(f"{k}={v}") for k, v in cause.node_selector[:_LISTED]]
    what = []
    if wanted:
        what.append(f"its `nodeSelector` {', '.join(wanted)}")
    if cause.terms:
        terms = " or ".join(_code(_requirement_text(t)) for t in cause.terms[:_TERMS])
        more = f" or {len(cause.terms) - _TERMS} more terms" if len(cause.terms) > _TERMS else ""
        what.append(f"its required node affinity {terms}{more}")
    reach = (
        "no node offering the resource" if cause.blocks_all else f"none of the nodes with room for it now ({_names(cause.roomy)})"
    )
    present = "; ".join(
        f"{_code(p.key)}: {', '.join(_code(v) for v in p.values[:_LISTED])}" if p.values else f"no {_code(p.key)} label"
        for p in cause.present
    )
    evidence = f" Those nodes have {present}." if present else ""
    return (
        f":round_pushpin: *Placement*: {' and '.join(what) or 'its node selection'} matches {reach}.{evidence} "
        "Fix: select a value the nodes have, or have an admin label a node."
    )


def _taint(cause: UntoleratedTaint) -> str:
    taint = _code(str(cause.taint))
    if cause.blocks_all:
        where = f"every node it could use ({_names(cause.nodes)}) has the taint {taint}"
    else:
        where = f"{_names(cause.roomy)} {'has' if len(cause.roomy) == 1 else 'have'} room for it but the taint {taint}"
    toleration = "\n".join(
        [f"- key: {cause.toleration['key']}", f"  operator: {cause.toleration['operator']}"]
        + ([f'  value: "{cause.toleration["value"]}"'] if "value" in cause.toleration else [])
        + [f"  effect: {cause.toleration['effect']}"]
    )
    return (
        f":lock: *Placement*: {where}, which the pod does not tolerate. "
        f"Fix: add to the pod spec's `tolerations`:\n```{escape(toleration)}```"
    )


def _unavailable(cause: NodesUnavailable) -> str:
    parts = ([f"cordoned: {_names(cause.cordoned)}"] if cause.cordoned else []) + (
        [f"not ready: {_names(cause.not_ready)}"] if cause.not_ready else []
    )
    scope = "The nodes it could use are out of service" if cause.blocks_all else "Nodes with room for it are out of service"
    return f":construction: *Placement*: {scope} ({'; '.join(parts)}). An admin uncordons or repairs them."


def _capacity(cause: NoCapacity) -> str:
    blocks = "; ".join(
        f"{_code(b.pool or 'nodes')}{f' ({escape(b.product)})' if b.product and b.product != b.pool else ''}: "
        f"{b.largest} on the best of {b.nodes} node{'s' if b.nodes != 1 else ''}"
        for b in cause.blocks[:_LISTED]
    )
    spread = (
        f" {cause.total_free} are free in all, but on several nodes: a pod takes its GPUs from one node."
        if cause.total_free >= cause.asks
        else ""
    )
    return (
        f":bar_chart: *Capacity*: no node it may use has {amount_of(cause.asks, cause.resource)} free. "
        f"Largest free block per pool: {blocks or 'none'}.{spread} {_scale_up(cause.scale_up)}"
    )


def _scale_up(scale: ScaleUp | None) -> str:
    if scale is None:
        return "No cluster autoscaler status (`kube-system/cluster-autoscaler-status`): nodes are not added automatically."
    parts = []
    if scale.can_grow:
        # Its status does not say which groups have GPUs: only that these may grow.
        parts.append(f"it could add a node to {_names(scale.can_grow)}, where that group's nodes have this resource")
    if scale.at_max:
        parts.append(f"{_names(scale.at_max)} at the maximum size")
    parts += [f"{_code(name)} backing off ({escape(error) or 'no reason given'})" for name, error in scale.backing_off]
    health = f" (health {escape(scale.health)})" if scale.health else ""
    return f"Cluster autoscaler{health}: {'; '.join(parts) or 'no node groups listed'}."


def _priority(cause: PriorityStanding) -> str:
    klass = _code(cause.priority_class or NO_CLASS_LABEL)
    head = f":arrow_up_small: *Priority*: it runs as {klass} (priority {cause.priority})."
    held = ", ".join(f"{_code(h.priority_class or NO_CLASS_LABEL)} ({h.priority}): {h.gpus}" for h in cause.held[:_LISTED])
    evidence = f" What holds those GPUs: {held}." if held else ""
    unseen = f" {cause.unseen} more are held by pods outside the managed namespaces." if cause.unseen else ""
    if cause.nominated_node:
        verdict = (
            f" The scheduler is preempting lower-priority pods on {_code(cause.nominated_node)} for it: it starts when they stop."
        )
    elif cause.lower and cause.may_preempt:
        verdict = f" Pods of lower priority hold {cause.lower} of them: the scheduler may preempt them for it."
    elif cause.lower:
        verdict = f" Pods of lower priority hold {cause.lower} of them, but its class never preempts (`preemptionPolicy: Never`)."
    else:
        verdict = " Nothing there has a lower priority: preemption cannot help; it waits for those pods to finish."
    return head + evidence + unseen + verdict


def _fits(cause: FitsNow) -> str:
    return (
        f":grey_question: *No cause found*: {_names(cause.nodes)} could take it now. The scheduler may not have retried "
        "yet, or it waits for something not checked here (CPU, memory, volumes, ports): see the scheduler's words."
    )


# --- the pick-a-pod form ------------------------------------------------------------------------------


def pick_form(pick: PickAPod) -> View:
    """A modal with the namespace's pending GPU pods to pick (at most 100; names too long for an option's value are
    left out, and said)."""
    listable = [p for p in pick.pods if len(p.name) <= MAX_OPTION_VALUE]
    options = [
        Option(
            text=truncate(f"{p.name} ({', '.join(amount_of(n, r) for r, n in p.asks.items())})", MAX_OPTION_TEXT),
            value=p.name,
        )
        for p in listable[:MAX_OPTIONS]
    ]
    lead = f"Nothing is called {_code(pick.missing)} in {_code(pick.namespace)}. " if pick.missing else ""
    left = len(pick.pods) - len(options)
    extra = f" ({left} more not listed: type `/gpu-quota why {escape(pick.namespace)}/<pod>`.)" if left else ""
    return View(
        type="modal",
        callback_id=ids.WHY_FORM,
        title="Why is it pending?",
        submit="Explain",
        close="Close",
        private_metadata=json.dumps({"namespace": pick.namespace}),
        blocks=[
            SectionBlock(
                text=MarkdownTextObject(text=truncate(f"{lead}Pick a pending GPU pod of {_code(pick.namespace)}.{extra}", 3000))
            ),
            InputBlock(
                block_id=ids.WHY_POD_BLOCK,
                label="Pod",
                element=StaticSelectElement(action_id=ids.INPUT_ACTION, placeholder="A pending pod", options=options),
            ),
            ContextBlock(elements=[MarkdownTextObject(text="Nothing is changed: the bot only reads the cluster.")]),
        ],
    )


def answer_view(outcome: WhyOutcome) -> View:
    """The form turned into the answer."""
    return View(type="modal", title="Why is it pending?", close="Close", blocks=why_blocks(outcome, in_modal=True))
