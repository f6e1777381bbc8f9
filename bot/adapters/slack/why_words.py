"""The words of ``/gpu-quota why``: an answer as Block Kit (cause first, its evidence, its fix, the [Request +N]
button, the scheduler's words quoted), and the pick-a-pod form, in the current language (``bot.adapters.i18n``).

Every sentence is a catalog entry made with ``fill`` / ``fill_n``; everything that comes from a cluster (pod, node,
label, taint and queue names, the scheduler's and Kueue's messages, which anyone who can create a pod or an event
can shape) is a value of those sentences, shown as it is (never translated) and escaped by ``mrkdwn.render``.
Kubernetes field names and the YAML of a fix stay in code spans, as the pod spec writes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from babel.lists import format_list
from slack_sdk.models.blocks import ContextBlock, InputBlock, MarkdownTextObject, Option, SectionBlock, StaticSelectElement
from slack_sdk.models.views import View

from bot.adapters import i18n
from bot.adapters.i18n import N_, format_number, gettext, tr, tr_n
from bot.adapters.slack import ids
from bot.adapters.slack.blocks import Block, actions, button, context, section, truncate
from bot.adapters.slack.buttons import button_label
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.resources import amount_of, resource_label
from bot.adapters.slack.sentences import fill, fill_n
from bot.domain.diagnosis import (
    Cause,
    Diagnosis,
    FitsNow,
    FreeBlock,
    Gated,
    LabelValues,
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
    SchedulerWords,
    SelectorMismatch,
    UntoleratedTaint,
)
from bot.domain.priority import NO_CLASS_LABEL
from bot.domain.resources import GPU, short_name
from bot.domain.scheduling import SelectorTerm
from bot.services.text import Code, Moment, Notice, Part, Quote, Words, plain
from bot.services.why import Check, CouldNotCheck, PickAPod, Unanswered, WhyAnswer, WhyOutcome

MAX_MODAL_BLOCKS = 100
MAX_MESSAGE_BLOCKS = 50
MAX_OPTIONS = 100  # a static_select's options
MAX_OPTION_TEXT = 75
MAX_OPTION_VALUE = 150
MAX_TITLE = 24  # a modal's title
_LISTED = 8  # names shown of a longer list
_TERMS = 3  # node affinity terms shown
_PICKED = 20  # pods named in the text answer of a namespace

# What each read is about, shown as "Could not check <it>" (translated where it is shown).
CHECKS = {
    Check.POD: N_("the pod"),
    Check.PODS: N_("the namespace's pods"),
    Check.NODES: N_("the nodes"),
    Check.EVENTS: N_("the scheduler's events"),
    Check.PRIORITY_CLASSES: N_("the priority classes"),
    Check.HOLDERS: N_("the pods holding the GPUs"),
    Check.AUTOSCALER: N_("the cluster autoscaler's status"),
    Check.QUOTA: N_("the quota"),
    Check.REFUSALS: N_("the quota's refusals"),
    Check.QUEUE: N_("the Kueue queue"),
}

Piece = Notice | Part | str


# --- sentences and lists --------------------------------------------------------------------------


def _parts(piece: Piece) -> tuple[Part, ...]:
    if isinstance(piece, Notice):
        return piece.parts
    return (Words(piece),) if isinstance(piece, str) else (piece,)


def _sentences(*notices: Notice | None) -> Notice:
    """Whole sentences one after the other (a space between them in English, none in Chinese: the catalog's)."""
    shown = [notice for notice in notices if notice is not None and notice.parts]
    if not shown:
        return Notice(())
    joined = shown[0]
    for notice in shown[1:]:
        # Translators: two whole sentences one after the other (Chinese: no space after "。").
        joined = fill("{sentence} {next}", sentence=joined, next=notice)
    return joined


def _series(items: Sequence[Piece]) -> Notice:
    """Items one after the other with the locale's list separator (CLDR: ", " in English, "、" in Chinese)."""
    separator = i18n.locale().list_patterns["standard"]["middle"].format("", "")
    parts: list[Part] = []
    for index, item in enumerate(items):
        if index:
            parts.append(Words(separator))
        parts.extend(_parts(item))
    return Notice(tuple(parts))


def _semicolons(items: Sequence[Notice]) -> Notice:
    """Items that hold commas themselves, one after the other."""
    if not items:
        return Notice(())
    joined = items[0]
    for item in items[1:]:
        # Translators: two items of a list whose items hold commas.
        joined = fill("{first}; {second}", first=joined, second=item)
    return joined


def _any_of(items: Sequence[Piece]) -> Notice:
    """Alternatives as the locale lists them ("a, b, or c"; "a、b或c")."""
    marks = format_list([f"\0{index}\0" for index in range(len(items))], style="or", locale=i18n.locale())
    parts: list[Part] = []
    for index, piece in enumerate(marks.split("\0")):
        if index % 2:
            parts.extend(_parts(items[int(piece)]))
        elif piece:
            parts.append(Words(piece))
    return Notice(tuple(parts))


def _names(names: Sequence[str], shown: int = _LISTED) -> Notice:
    """Names in code spans, the first ``shown`` of them and how many more."""
    listed = _series([Code(name) for name in names[:shown]])
    if len(names) <= shown:
        return listed
    return fill_n("{names} and {count} more", "{names} and {count} more", len(names) - shown, names=listed)


def _amounts(asks: Mapping[str, int]) -> Notice:
    return _series([amount_of(count, resource) for resource, count in asks.items()])


def _request_command(fix: RequestMore) -> Code:
    word = f" {short_name(fix.resource)}" if fix.resource != GPU else ""
    # Translators: what a person types in place of these in a command (kept in angle brackets).
    duration, reason = tr("<duration>"), tr("<reason>")
    return Code(f"/gpu-quota request {fix.namespace} +{fix.amount}{word} for {duration} {reason}")


def _why_command(namespace: str) -> Code:
    pod = tr("<pod>")
    return Code(f"/gpu-quota why {namespace}/{pod}")


def _subject(namespace: str, name: str | None) -> Code:
    return Code(f"{namespace}/{name}" if name else namespace)


# --- the answer -------------------------------------------------------------------------------------


def why_blocks(outcome: WhyOutcome, *, in_modal: bool = False) -> list[Block]:
    """The answer as blocks; in a modal the fix is the command to type (a button there would open no form)."""
    if isinstance(outcome, WhyAnswer):
        blocks = _answer_blocks(outcome, in_modal=in_modal)
    else:
        blocks = [section(why_text(outcome))]
    limit = MAX_MODAL_BLOCKS if in_modal else MAX_MESSAGE_BLOCKS
    if len(blocks) <= limit:
        return blocks
    left = len(blocks) - limit + 1
    return [*blocks[: limit - 1], context(render(fill_n("… and {count} more", "… and {count} more", left)))]


def why_text(outcome: WhyOutcome) -> str:
    """The answer as one mrkdwn text: a notification's fallback, and the whole of the short answers."""
    if isinstance(outcome, Unanswered):
        return render(_unanswered(outcome))
    if isinstance(outcome, PickAPod):
        return render(_pick_text(outcome))
    return render(_title(outcome))


def _unanswered(outcome: Unanswered) -> Notice:
    where = _subject(outcome.namespace, outcome.name)
    failed = outcome.problem
    if failed is None:
        return fill(":warning: The bot reads no cluster for `why`, so it cannot say why {where} is pending.", where=where)
    what = gettext(CHECKS[failed.check])
    if failed.permission:
        return fill(
            ":warning: Could not look for {where}: {what}: {problem}. The bot needs the permission {permission}.",
            where=where,
            what=what,
            problem=failed.problem,
            permission=Code(failed.permission),
        )
    return fill(":warning: Could not look for {where}: {what}: {problem}.", where=where, what=what, problem=failed.problem)


def _could_not_check(failed: CouldNotCheck) -> Notice:
    what = gettext(CHECKS[failed.check])
    if failed.permission:
        return fill(
            ":warning: Could not check {what}: {problem}. The bot needs the permission {permission}.",
            what=what,
            problem=failed.problem,
            permission=Code(failed.permission),
        )
    return fill(":warning: Could not check {what}: {problem}.", what=what, problem=failed.problem)


def _missing(pick: PickAPod) -> Notice | None:
    if not pick.missing:
        return None
    return fill(
        "Nothing is called {name} in {namespace} (no pod, Job, Deployment, StatefulSet or Kueue Workload).",
        name=Code(pick.missing),
        namespace=Code(pick.namespace),
    )


def _pick_text(pick: PickAPod) -> Notice:
    namespace = Code(pick.namespace)
    if not pick.pods:
        return _sentences(_missing(pick), fill("No GPU pod is pending in {namespace}.", namespace=namespace))
    pods = _names([p.name for p in pick.pods], _PICKED)
    listing = fill(
        "Pending GPU pods in {namespace}: {pods}. Ask {command}.",
        namespace=namespace,
        pods=pods,
        command=_why_command(pick.namespace),
    )
    return _sentences(_missing(pick), listing)


def _title(answer: WhyAnswer) -> Notice:
    subject = _subject(answer.namespace, answer.name)
    kind = answer.kind
    finding = answer.finding
    if isinstance(finding, Scheduled):
        if kind == "Pod":
            return fill("*{subject}*: not pending.", subject=subject)
        return fill("*{kind} {subject}*: not pending.", kind=kind, subject=subject)
    if finding.pod is None:
        return fill("*Why {kind} {subject} has no pods*", kind=kind, subject=subject)
    if kind == "Pod":
        return fill("*Why {subject} is pending*", subject=subject)
    return fill("*Why {kind} {subject} is pending* (its pod {pod})", kind=kind, subject=subject, pod=Code(finding.pod))


def _answer_blocks(answer: WhyAnswer, *, in_modal: bool) -> list[Block]:
    blocks = [section(render(_title(answer)))]
    finding = answer.finding
    if isinstance(finding, Scheduled):
        blocks.append(section(render(_scheduled(finding))))
    else:
        blocks += [section(text) for cause in finding.causes if (text := cause_text(cause, in_modal=in_modal))]
        if not finding.causes:
            blocks.append(section(render(_nothing_found(answer))))
        if answer.actions and not in_modal:
            blocks.append(
                actions(
                    [button(_button(a.value, button_label(a)), ids.ACTION_IDS[a.kind], a.value, a.style) for a in answer.actions]
                )
            )
        if finding.said is not None:
            blocks.append(section(render(_scheduler_said(finding.said))))
    if answer.others_pending:
        more = answer.others_pending
        blocks.append(
            context(
                render(
                    fill_n(
                        "{count} more pod of {name} pending; this is its first.",
                        "{count} more pods of {name} pending; this is its first.",
                        more,
                        name=Code(answer.name),
                    )
                )
            )
        )
    notes = [] if isinstance(finding, Scheduled) else finding.notes
    if notes:
        blocks.append(context(render(fill("Not checked: whether the image has CUDA libraries that match the nodes' driver."))))
    blocks += [context(render(_could_not_check(failed))) for failed in answer.unchecked]
    return blocks


def _scheduler_said(said: SchedulerWords) -> Notice:
    words = Quote(said.message)
    if said.count <= 1:
        return fill("*The scheduler's words*:\n{words}", words=words)
    if said.last_seen is None:
        return fill_n(
            "*The scheduler's words* ({count} time):\n{words}",
            "*The scheduler's words* ({count} times):\n{words}",
            said.count,
            words=words,
        )
    return fill_n(
        "*The scheduler's words* ({count} time, last {last}):\n{words}",
        "*The scheduler's words* ({count} times, last {last}):\n{words}",
        said.count,
        last=Moment(said.last_seen),
        words=words,
    )


def _button(value: str, label: str) -> str:
    """``Request +2 GPUs``, ``Request +1 MIG 3g.40gb slice``: what the button asks for (else its label)."""
    try:
        data = json.loads(value)
        amount = int(str(data["gpus"]).lstrip("+"))
        return tr("Request +{amount}", amount=amount_of(amount, str(data.get("resource") or GPU)))
    except (ValueError, KeyError, AttributeError, TypeError):
        return label


def _scheduled(found: Scheduled) -> Notice:
    asks = _amounts(found.asks) if found.asks else Notice((Words(tr("no GPUs")),))
    node = Code(found.node)
    if found.phase == "Running":
        if found.since:
            return fill(
                ":white_check_mark: Running on node {node} since {since}, with {asks}.",
                node=node,
                since=Moment(found.since),
                asks=asks,
            )
        return fill(":white_check_mark: Running on node {node}, with {asks}.", node=node, asks=asks)
    if found.since:
        return fill(
            ":white_check_mark: Scheduled on node {node} since {since} (phase {phase}: its containers are starting), with {asks}.",
            node=node,
            since=Moment(found.since),
            phase=found.phase,
            asks=asks,
        )
    return fill(
        ":white_check_mark: Scheduled on node {node} (phase {phase}: its containers are starting), with {asks}.",
        node=node,
        phase=found.phase,
        asks=asks,
    )


def _nothing_found(answer: WhyAnswer) -> Notice:
    finding = answer.finding
    if isinstance(finding, Diagnosis) and finding.pod is None:
        namespace = tr("<namespace>")
        command = Code(f"kubectl describe {answer.kind.lower()} {answer.name} -n {namespace}")
        return fill(
            "Neither the quota nor Kueue says why {kind} {name} has no pods: its own events tell ({command}).",
            kind=answer.kind,
            name=Code(answer.name),
            command=command,
        )
    return fill("No cause found in what the bot could read: the scheduler's words below say what it waits for.")


# --- one cause each ---------------------------------------------------------------------------------


def cause_text(cause: Cause, *, in_modal: bool = False) -> str:
    """The cause as mrkdwn: what it is, the evidence, the fix."""
    return render(cause_notice(cause, in_modal=in_modal))


def cause_notice(cause: Cause, *, in_modal: bool = False) -> Notice:
    """The cause in sentences: what it is, the evidence, the fix."""
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


def _not_advertised(cause: NotAdvertised) -> Notice:
    head = fill(":pencil2: *Spec*: it asks for {resource}, which no node advertises.", resource=Code(cause.resource))
    offered = fill("The nodes offer {resources}.", resources=_names(cause.offered)) if cause.offered else None
    if cause.mistake is Mistake.TYPO:
        suggestion = Code(cause.suggestion or "")
        return _sentences(
            head,
            fill("Did you mean {suggestion}?", suggestion=suggestion),
            fill(
                "Fix: change the resource in the container's `resources.limits` (and `requests`) to {resource}.",
                resource=suggestion,
            ),
        )
    if cause.mistake is Mistake.WHOLE_GPU_ON_MIG:
        return _sentences(
            head,
            fill("The nodes are partitioned into MIG slices only: {resources}.", resources=_names(cause.offered)),
            fill("Fix: change the resource in the container's `resources.limits` (and `requests`) to one of those profiles."),
        )
    if cause.mistake is Mistake.MIG_PROFILE:
        return _sentences(
            head,
            fill("No node is partitioned into that MIG profile."),
            offered or fill("No node offers MIG slices."),
            fill("The closest: {suggestion}.", suggestion=Code(cause.suggestion)) if cause.suggestion else None,
            fill(
                "Fix: change the resource in the container's `resources.limits` (and `requests`), or ask an admin for that MIG layout."
            ),
        )
    if cause.mistake is Mistake.NO_DEVICE_PLUGIN:
        return _sentences(
            head,
            fill(
                "The cluster has GPU nodes, but none advertises an NVIDIA resource: the NVIDIA device plugin is probably not "
                "running on them. An admin can check with `/gpu-quota doctor`."
            ),
        )
    return _sentences(
        head,
        offered,
        fill("Fix: change the resource in the container's `resources.limits` (and `requests`) to a resource the nodes offer."),
    )


def _quota(cause: QuotaFull, in_modal: bool) -> Notice:
    values: dict[str, Notice | Part | str] = {
        "namespace": Code(cause.namespace),
        "hard": format_number(cause.hard),
        "used": format_number(cause.used),
    }
    if cause.asks:
        values["asks"] = amount_of(cause.asks, cause.resource)
    if cause.holders:
        values["holders"] = _names(cause.holders)
    if cause.asks and cause.holders:
        state = fill(
            ":no_entry: *Quota*: A pod asks {asks}; the quota of {namespace} allows {hard} and {used} are in use (pods {holders}), "
            "so the pods are not created.",
            **values,
        )
    elif cause.asks:
        state = fill(
            ":no_entry: *Quota*: A pod asks {asks}; the quota of {namespace} allows {hard} and {used} are in use, "
            "so the pods are not created.",
            **values,
        )
    elif cause.holders:
        state = fill(
            ":no_entry: *Quota*: the quota of {namespace} allows {hard} and {used} are in use (pods {holders}), "
            "so the pods are not created.",
            **values,
        )
    else:
        state = fill(
            ":no_entry: *Quota*: the quota of {namespace} allows {hard} and {used} are in use, so the pods are not created.",
            **values,
        )
    amount = amount_of(cause.fix.amount, cause.resource)
    if in_modal:
        how = fill(
            "{amount} more would let it in: type {command} to ask for them.", amount=amount, command=_request_command(cause.fix)
        )
    else:
        how = fill("{amount} more would let it in: press the button below to ask for them.", amount=amount)
    return _sentences(state, how)


def _queue(cause: QueueWait, in_modal: bool) -> Notice:
    values: dict[str, Notice | Part | str] = {
        "workload": Code(cause.workload),
        "queue": Code(cause.cluster_queue),
        "flavor": Code(cause.flavor),
        "resource": resource_label(cause.resource),
    }
    if cause.nominal is not None and cause.reserved is not None:
        waits = fill(
            ":hourglass_flowing_sand: *Kueue*: the workload {workload} waits for quota in ClusterQueue {queue} "
            "(flavor {flavor}, {resource}): nominal quota {nominal}, {reserved} reserved by admitted workloads.",
            nominal=format_number(cause.nominal),
            reserved=format_number(cause.reserved),
            **values,
        )
    else:
        waits = fill(
            ":hourglass_flowing_sand: *Kueue*: the workload {workload} waits for quota in ClusterQueue {queue} "
            "(flavor {flavor}, {resource}).",
            **values,
        )
    place = (
        fill(
            "It is number {position} of {waiting} waiting (by age; Kueue puts higher priorities first).",
            position=format_number(cause.position),
            waiting=format_number(cause.waiting),
        )
        if cause.position
        else None
    )
    then: Notice | None = None
    if cause.preemption_pending:
        then = fill("Kueue is preempting other workloads to make room: it should be admitted when they stop.")
    elif cause.fix is not None:
        amount = amount_of(cause.fix.amount, cause.resource)
        if in_modal:
            then = fill(
                "{amount} more would admit it: type {command} to ask for them.",
                amount=amount,
                command=_request_command(cause.fix),
            )
        else:
            then = fill("{amount} more would admit it: press the button below to ask for them.", amount=amount)
    text = _sentences(waits, place, then)
    if not cause.message:
        return text
    return Notice((*text.parts, Words("\n"), *fill("Kueue said:\n{words}", words=Quote(cause.message)).parts))


def _gated(cause: Gated) -> Notice:
    if cause.kueue:
        return fill(
            ":no_entry_sign: *Scheduling gates*: the scheduler does not consider the pod while it has {gates}. Kueue removes its "
            "gate when it admits the workload. Capacity and priority are not checked until then.",
            gates=_names(cause.gates),
        )
    return fill(
        ":no_entry_sign: *Scheduling gates*: the scheduler does not consider the pod while it has {gates}. Whatever added them "
        "removes them. Capacity and priority are not checked until then.",
        gates=_names(cause.gates),
    )


def _requirement_text(term: SelectorTerm) -> str:
    """A term as ``key In (a, b)``, each value list cut after ``_LISTED`` (a pod may pin 150 nodes): code to show."""

    def values(listed: tuple[str, ...]) -> str:
        shown = ", ".join(listed[:_LISTED])
        if len(listed) <= _LISTED:
            return shown
        return tr_n("{values}, {count} more", "{values}, {count} more", len(listed) - _LISTED, values=shown)

    texts = [f"{r.key} {r.operator} ({values(r.values)})" if r.values else f"{r.key} {r.operator}" for r in term.requirements]
    joined = texts[0] if texts else ""
    for text in texts[1:]:
        # Translators: two requirements of a node affinity term, both to hold (inside a code span).
        joined = tr("{requirement} and {next}", requirement=joined, next=text)
    return joined


def _terms(terms: Sequence[SelectorTerm]) -> Notice:
    shown: list[Piece] = [Code(_requirement_text(t)) for t in terms[:_TERMS]]
    if len(terms) > _TERMS:
        more = len(terms) - _TERMS
        shown.append(fill_n("{count} more term", "{count} more terms", more))
    return _any_of(shown)


def _label(present: LabelValues) -> Notice:
    if not present.values:
        return fill("no {key} label", key=Code(present.key))
    return fill("{key}: {values}", key=Code(present.key), values=_series([Code(v) for v in present.values[:_LISTED]]))


def _selector(cause: SelectorMismatch) -> Notice:
    values: dict[str, Notice | Part | str] = {}
    if cause.node_selector:
        values["selector"] = _series([Code(f"{k}={v}") for k, v in cause.node_selector[:_LISTED]])
    if cause.terms:
        values["terms"] = _terms(cause.terms)
    if cause.blocks_all:
        if cause.node_selector and cause.terms:
            what = fill(
                ":round_pushpin: *Placement*: its `nodeSelector` {selector} and its required node affinity {terms} "
                "match no node offering the resource.",
                **values,
            )
        elif cause.node_selector:
            what = fill(
                ":round_pushpin: *Placement*: its `nodeSelector` {selector} matches no node offering the resource.", **values
            )
        elif cause.terms:
            what = fill(
                ":round_pushpin: *Placement*: its required node affinity {terms} matches no node offering the resource.", **values
            )
        else:
            what = fill(":round_pushpin: *Placement*: its node selection matches no node offering the resource.")
    else:
        values["nodes"] = _names(cause.roomy)
        if cause.node_selector and cause.terms:
            what = fill(
                ":round_pushpin: *Placement*: its `nodeSelector` {selector} and its required node affinity {terms} "
                "match none of the nodes with room for it now ({nodes}).",
                **values,
            )
        elif cause.node_selector:
            what = fill(
                ":round_pushpin: *Placement*: its `nodeSelector` {selector} matches none of the nodes with room for it now ({nodes}).",
                **values,
            )
        elif cause.terms:
            what = fill(
                ":round_pushpin: *Placement*: its required node affinity {terms} matches none of the nodes with room for it now "
                "({nodes}).",
                **values,
            )
        else:
            what = fill(
                ":round_pushpin: *Placement*: its node selection matches none of the nodes with room for it now ({nodes}).",
                **values,
            )
    present = [_label(p) for p in cause.present]
    evidence = fill("Those nodes have {labels}.", labels=_semicolons(present)) if present else None
    return _sentences(what, evidence, fill("Fix: select a value the nodes have, or have an admin label a node."))


def _toleration_yaml(cause: UntoleratedTaint) -> str:
    toleration = cause.toleration
    return "\n".join(
        [f"- key: {toleration['key']}", f"  operator: {toleration['operator']}"]
        + ([f'  value: "{toleration["value"]}"'] if "value" in toleration else [])
        + [f"  effect: {toleration['effect']}"]
    )


def _taint(cause: UntoleratedTaint) -> Notice:
    taint = Code(str(cause.taint))
    if cause.blocks_all:
        where = fill(
            ":lock: *Placement*: every node it could use ({nodes}) has the taint {taint}, which the pod does not tolerate.",
            nodes=_names(cause.nodes),
            taint=taint,
        )
    else:
        where = fill_n(
            ":lock: *Placement*: {nodes} has room for it but the taint {taint}, which the pod does not tolerate.",
            ":lock: *Placement*: {nodes} have room for it but the taint {taint}, which the pod does not tolerate.",
            len(cause.roomy),
            nodes=_names(cause.roomy),
            taint=taint,
        )
    fix = fill("Fix: add to the pod spec's `tolerations`:\n```{toleration}```", toleration=_toleration_yaml(cause))
    return _sentences(where, fix)


def _unavailable(cause: NodesUnavailable) -> Notice:
    parts = ([fill("cordoned: {nodes}", nodes=_names(cause.cordoned))] if cause.cordoned else []) + (
        [fill("not ready: {nodes}", nodes=_names(cause.not_ready))] if cause.not_ready else []
    )
    if cause.blocks_all:
        return fill(
            ":construction: *Placement*: The nodes it could use are out of service ({nodes}). An admin uncordons or repairs them.",
            nodes=_semicolons(parts),
        )
    return fill(
        ":construction: *Placement*: Nodes with room for it are out of service ({nodes}). An admin uncordons or repairs them.",
        nodes=_semicolons(parts),
    )


def _free_block(block: FreeBlock) -> Notice:
    largest = format_number(block.largest)
    if not block.pool:
        return fill_n(
            "unlabelled nodes: {largest} on the best of {count} node",
            "unlabelled nodes: {largest} on the best of {count} nodes",
            block.nodes,
            largest=largest,
        )
    if block.product and block.product != block.pool:
        return fill_n(
            "{pool} ({product}): {largest} on the best of {count} node",
            "{pool} ({product}): {largest} on the best of {count} nodes",
            block.nodes,
            pool=Code(block.pool),
            product=block.product,
            largest=largest,
        )
    return fill_n(
        "{pool}: {largest} on the best of {count} node",
        "{pool}: {largest} on the best of {count} nodes",
        block.nodes,
        pool=Code(block.pool),
        largest=largest,
    )


def _capacity(cause: NoCapacity) -> Notice:
    head = fill(":bar_chart: *Capacity*: no node it may use has {amount} free.", amount=amount_of(cause.asks, cause.resource))
    if cause.blocks:
        blocks = fill(
            "Largest free block per pool: {blocks}.", blocks=_semicolons([_free_block(b) for b in cause.blocks[:_LISTED]])
        )
    else:
        blocks = fill("Largest free block per pool: none.")
    spread = (
        fill(
            "{free} are free in all, but on several nodes: a pod takes its GPUs from one node.",
            free=format_number(cause.total_free),
        )
        if cause.total_free >= cause.asks
        else None
    )
    return _sentences(head, blocks, spread, _scale_up(cause.scale_up))


def _scale_up(scale: ScaleUp | None) -> Notice:
    if scale is None:
        return fill("No cluster autoscaler status (`kube-system/cluster-autoscaler-status`): nodes are not added automatically.")
    parts = []
    if scale.can_grow:
        # Its status does not say which groups have GPUs: only that these may grow.
        parts.append(
            fill("it could add a node to {groups}, where that group's nodes have this resource", groups=_names(scale.can_grow))
        )
    if scale.at_max:
        parts.append(fill("{groups} at the maximum size", groups=_names(scale.at_max)))
    parts += [
        fill("{group} backing off ({error})", group=Code(name), error=error)
        if error
        else fill("{group} backing off (no reason given)", group=Code(name))
        for name, error in scale.backing_off
    ]
    if parts and scale.health:
        return fill("Cluster autoscaler (health {health}): {groups}.", health=scale.health, groups=_semicolons(parts))
    if parts:
        return fill("Cluster autoscaler: {groups}.", groups=_semicolons(parts))
    if scale.health:
        return fill("Cluster autoscaler (health {health}): no node groups listed.", health=scale.health)
    return fill("Cluster autoscaler: no node groups listed.")


def _priority(cause: PriorityStanding) -> Notice:
    head = fill(
        ":arrow_up_small: *Priority*: it runs as {priority_class} (priority {priority}).",
        priority_class=Code(cause.priority_class or NO_CLASS_LABEL),
        priority=str(cause.priority),
    )
    held = [
        fill(
            "{priority_class} ({priority}): {gpus}",
            priority_class=Code(h.priority_class or NO_CLASS_LABEL),
            priority=str(h.priority),
            gpus=format_number(h.gpus),
        )
        for h in cause.held[:_LISTED]
    ]
    evidence = fill("What holds those GPUs: {held}.", held=_series(held)) if held else None
    unseen = (
        fill_n(
            "{count} more is held by pods outside the managed namespaces.",
            "{count} more are held by pods outside the managed namespaces.",
            cause.unseen,
        )
        if cause.unseen
        else None
    )
    if cause.nominated_node:
        verdict = fill(
            "The scheduler is preempting lower-priority pods on {node} for it: it starts when they stop.",
            node=Code(cause.nominated_node),
        )
    elif cause.lower and cause.may_preempt:
        verdict = fill(
            "Pods of lower priority hold {lower} of them: the scheduler may preempt them for it.",
            lower=format_number(cause.lower),
        )
    elif cause.lower:
        verdict = fill(
            "Pods of lower priority hold {lower} of them, but its class never preempts (`preemptionPolicy: Never`).",
            lower=format_number(cause.lower),
        )
    else:
        verdict = fill("Nothing there has a lower priority: preemption cannot help; it waits for those pods to finish.")
    return _sentences(head, evidence, unseen, verdict)


def _fits(cause: FitsNow) -> Notice:
    return fill(
        ":grey_question: *No cause found*: {nodes} could take it now. The scheduler may not have retried yet, or it waits for "
        "something not checked here (CPU, memory, volumes, ports): see the scheduler's words.",
        nodes=_names(cause.nodes),
    )


# --- the pick-a-pod form ------------------------------------------------------------------------------


def pick_form(pick: PickAPod) -> View:
    """A modal with the namespace's pending GPU pods to pick (at most 100; names too long for an option's value are
    left out, and said)."""
    listable = [p for p in pick.pods if len(p.name) <= MAX_OPTION_VALUE]
    options = [
        Option(
            text=truncate(tr("{pod} ({asks})", pod=p.name, asks=plain(_amounts(p.asks))), MAX_OPTION_TEXT),
            value=p.name,
        )
        for p in listable[:MAX_OPTIONS]
    ]
    namespace = Code(pick.namespace)
    left = len(pick.pods) - len(options)
    lead = _sentences(
        fill("Nothing is called {name} in {namespace}.", name=Code(pick.missing), namespace=namespace) if pick.missing else None,
        fill("Pick a pending GPU pod of {namespace}.", namespace=namespace),
        fill_n(
            "({count} more not listed: type {command}.)",
            "({count} more not listed: type {command}.)",
            left,
            command=_why_command(pick.namespace),
        )
        if left
        else None,
    )
    return View(
        type="modal",
        callback_id=ids.WHY_FORM,
        title=form_title(),
        submit=tr("Explain"),
        close=tr("Close"),
        private_metadata=json.dumps({"namespace": pick.namespace}),
        blocks=[
            SectionBlock(text=MarkdownTextObject(text=truncate(render(lead), 3000))),
            InputBlock(
                block_id=ids.WHY_POD_BLOCK,
                label=tr("Pod"),
                element=StaticSelectElement(action_id=ids.INPUT_ACTION, placeholder=tr("A pending pod"), options=options),
            ),
            ContextBlock(elements=[MarkdownTextObject(text=render(fill("Nothing is changed: the bot only reads the cluster.")))]),
        ],
    )


def form_title() -> str:
    """The why form's title (a modal's title is plain text of at most 24 characters)."""
    return truncate(tr("Why is it pending?"), MAX_TITLE)


def answer_view(outcome: WhyOutcome) -> View:
    """The form turned into the answer."""
    return View(type="modal", title=form_title(), close=tr("Close"), blocks=why_blocks(outcome, in_modal=True))
