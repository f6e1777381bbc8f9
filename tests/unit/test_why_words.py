"""The words of ``why``: every cause worded with its evidence and fix, what came from the cluster escaped, the blocks
and the pick-a-pod form within Slack's limits."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from slack_sdk.models.blocks import Block

from bot.adapters.i18n import speaking
from bot.adapters.slack import ids
from bot.adapters.slack.why_words import answer_view, cause_text, pick_form, why_blocks, why_text
from bot.domain.diagnosis import (
    Diagnosis,
    FitsNow,
    FreeBlock,
    Gated,
    HeldBy,
    LabelValues,
    Mistake,
    NoCapacity,
    NodesUnavailable,
    NotAdvertised,
    Note,
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
from bot.domain.languages import Language
from bot.domain.scheduling import Requirement, SelectorTerm, Taint, Toleration
from bot.services.ports import Action, ActionKind, ButtonLabel
from bot.services.why import Check, CouldNotCheck, PendingChoice, PickAPod, Unanswered, WhyAnswer
from tests.language_checks import catalog_misses, foreign_words
from tests.unit.test_blocks import assert_valid_message

GPU = "nvidia.com/gpu"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
NS = "ai-frontier-research"
FIX = RequestMore(NS, 2, GPU)
QUOTA = QuotaFull(NS, GPU, 2, 4, 4, ("a", "b"), FIX)
TAINT = UntoleratedTaint(
    Taint(GPU, "true", "NoSchedule"), ("gpu-1",), True, ("gpu-1",), Toleration(GPU, "Equal", "true", "NoSchedule")
)


def answer(*causes: object, said: str | None = None, **overrides: object) -> WhyAnswer:
    words = SchedulerWords(said, 3, T0) if said is not None else None
    finding = Diagnosis(NS, "train", {GPU: 2}, tuple(causes), words, (Note.IMAGE_NOT_CHECKED,))  # type: ignore[arg-type]
    values: dict[str, object] = {"namespace": NS, "kind": "Pod", "name": "train", "finding": finding}
    values.update(overrides)
    return WhyAnswer(**values)  # type: ignore[arg-type]


def text_of(blocks: list[dict]) -> str:
    """The mrkdwn of the sections and contexts (buttons left out)."""
    texts = [b["text"]["text"] for b in blocks if "text" in b]
    texts += [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    return "\n".join(texts)


def test_the_quota_cause_says_asks_hard_used_holders_and_the_button_requests_the_shortfall() -> None:
    outcome = answer(QUOTA, actions=(Action(ActionKind.REQUEST_MORE, ButtonLabel.REQUEST_MORE, FIX.value, "primary"),))
    blocks = why_blocks(outcome)
    assert_valid_message(blocks)
    text = text_of(blocks)
    assert "A pod asks 2 GPUs; the quota of `ai-frontier-research` allows 4 and 4 are in use (pods `a`, `b`)" in text
    (buttons,) = [b for b in blocks if b["type"] == "actions"]
    (button,) = buttons["elements"]
    assert button["text"]["text"] == "Request +2 GPUs" and button["action_id"] == ids.ACTION_IDS[ActionKind.REQUEST_MORE]
    assert json.loads(button["value"]) == {"namespace": NS, "gpus": "+2", "resource": GPU}


def test_in_the_modal_the_fix_is_the_command_to_type_not_a_button() -> None:
    outcome = answer(QUOTA, actions=(Action(ActionKind.REQUEST_MORE, ButtonLabel.REQUEST_MORE, FIX.value, "primary"),))
    blocks = why_blocks(outcome, in_modal=True)
    assert not [b for b in blocks if b["type"] == "actions"]
    assert "`/gpu-quota request ai-frontier-research +2 for &lt;duration&gt; &lt;reason&gt;`" in text_of(blocks)
    answer_view(outcome).to_dict()  # validates


def test_a_taint_names_the_taint_and_the_toleration_to_add_as_yaml() -> None:
    text = cause_text(TAINT)
    assert "`nvidia.com/gpu=true:NoSchedule`" in text
    assert '```- key: nvidia.com/gpu\n  operator: Equal\n  value: "true"\n  effect: NoSchedule```' in text


def test_every_cause_has_words_naming_its_evidence() -> None:
    cases = {
        NotAdvertised("nvidia.com/gpus", Mistake.TYPO, GPU, (GPU,)): "Did you mean `nvidia.com/gpu`?",
        NotAdvertised(GPU, Mistake.WHOLE_GPU_ON_MIG, None, ("nvidia.com/mig-1g.10gb",)): "`nvidia.com/mig-1g.10gb`",
        NotAdvertised("nvidia.com/mig-2g.20gb", Mistake.MIG_PROFILE, None, ()): "No node offers MIG slices",
        NotAdvertised(GPU, Mistake.NO_DEVICE_PLUGIN, None, ()): "device plugin",
        NotAdvertised("example.com/fpga", Mistake.UNKNOWN, None, ()): "`example.com/fpga`",
        QueueWait(NS, GPU, "cq", "h100", "wl", 8, 8, 2, 3, 5, "2 more needed", False, FIX): "number 3 of 5 waiting",
        Gated(("kueue.x-k8s.io/admission",)): "Kueue removes its gate",
        SelectorMismatch((("gpu", "h200"),), (), (LabelValues("gpu", ("a100", "h100")),), True, ()): "`gpu`: `a100`, `h100`",
        NodesUnavailable(("gpu-2",), (), True, ()): "cordoned: `gpu-2`",
        NoCapacity(GPU, 4, (FreeBlock("h100", "NVIDIA-H100", 2, 3),), 5, ScaleUp("Healthy", ("h100",), (), ())): (
            "it could add a node to `h100`"
        ),
        NoCapacity(GPU, 4, (), 0, None): "nodes are not added automatically",
        PriorityStanding("low", 100, True, (HeldBy("high", 1000, 8),), 0, 0, None): "preemption cannot help",
        PriorityStanding("never", 500, False, (HeldBy("", 0, 8),), 8, 0, None): "`preemptionPolicy: Never`",
        PriorityStanding("high", 1000, True, (), 8, 0, "gpu-3"): "preempting lower-priority pods on `gpu-3`",
        FitsNow(("gpu-4",)): "`gpu-4` could take it now",
    }
    for cause, expected in cases.items():
        assert expected in cause_text(cause), cause


def test_what_the_cluster_says_is_escaped_everywhere() -> None:
    hostile = "<!channel> *pwn* <https://evil.example|click>"
    outcome = answer(
        NotAdvertised("nvidia.com/gpus", Mistake.TYPO, GPU, (GPU,)),
        QueueWait(NS, GPU, "cq", "h100", "wl", 8, 8, None, None, 0, hostile, False, None),
        said=hostile,
        unchecked=(CouldNotCheck(Check.NODES, hostile, "list nodes"),),
    )
    text = text_of(why_blocks(outcome))
    assert "<!channel>" not in text and "<https://" not in text
    assert "&lt;!channel&gt;" in text
    assert "> &lt;!channel&gt; *pwn*" in text  # the scheduler's words quoted, inert


def test_the_scheduler_s_words_could_not_check_and_the_cuda_note_are_shown() -> None:
    outcome = answer(FitsNow(("gpu-1",)), said="0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", unchecked=(
        CouldNotCheck(Check.AUTOSCALER, "the cluster refused (HTTP 403)", "get configmaps/cluster-autoscaler-status -n kube-system"),
    ))  # fmt: skip
    text = text_of(why_blocks(outcome))
    assert "*The scheduler's words* (3 times" in text and "> 0/4 nodes are available" in text
    assert "Could not check the cluster autoscaler's status: the cluster refused (HTTP 403)." in text
    assert "`get configmaps/cluster-autoscaler-status -n kube-system`" in text
    assert "CUDA" in text


def test_a_running_pod_is_not_pending() -> None:
    running = WhyAnswer(NS, "Pod", "serve", Scheduled(NS, "serve", "gpu-1", "Running", T0, {GPU: 2}))
    text = text_of(why_blocks(running))
    assert "not pending" in text and "Running on node `gpu-1` since" in text and "2 GPUs" in text


def test_a_workload_s_answer_names_it_and_its_other_pending_pods() -> None:
    outcome = answer(FitsNow(("gpu-1",)), kind="Job", name="train-job", others_pending=3)
    text = text_of(why_blocks(outcome))
    assert "*Why Job `ai-frontier-research/train-job` is pending* (its pod `train`)" in text
    assert "3 more pods of `train-job` pending" in text


def test_a_long_answer_stays_within_the_block_limit() -> None:
    outcome = answer(*[FitsNow((f"n{i}",)) for i in range(80)])
    assert_valid_message(why_blocks(outcome))
    assert len(why_blocks(outcome, in_modal=True)) <= 100


def test_unanswered_and_pick_texts() -> None:
    assert "reads no cluster" in why_text(Unanswered(NS, "train"))
    broken = Unanswered(NS, "train", CouldNotCheck(Check.POD, "the Kubernetes API did not answer"))
    assert "Could not look for `ai-frontier-research/train`: the pod: the Kubernetes API did not answer." in why_text(broken)
    assert "No GPU pod is pending" in why_text(PickAPod(NS, "trian", ()))
    assert "Nothing is called `trian`" in why_text(PickAPod(NS, "trian", (PendingChoice("train", {GPU: 2}),)))


def test_the_pick_form_keeps_to_100_options_of_75_characters_and_says_what_it_left_out() -> None:
    pods = tuple(PendingChoice(f"pod-{i:03d}-" + "x" * 80, {GPU: 1}) for i in range(120)) + (PendingChoice("y" * 200, {GPU: 1}),)
    view = pick_form(PickAPod(NS, None, pods))
    data = view.to_dict()  # slack_sdk validates the limits
    (select,) = [b for b in data["blocks"] if b["type"] == "input"]
    options = select["element"]["options"]
    assert len(options) == 100 and all(len(o["text"]["text"]) <= 75 for o in options)
    assert options[0]["value"] == pods[0].name
    assert "21 more not listed" in json.dumps(data)
    assert json.loads(data["private_metadata"]) == {"namespace": NS}
    assert data["callback_id"] == ids.WHY_FORM
    assert Block.parse(data["blocks"][0]) is not None


def test_a_pod_pinned_to_many_nodes_keeps_its_placement_evidence_and_fix_whole() -> None:
    pinned = SelectorTerm((Requirement("metadata.name", "In", tuple(f"gpu-node-{i:03d}" for i in range(150))),))
    text = cause_text(SelectorMismatch((), (pinned,) * 5, (), True, ()))
    assert "142 more" in text and "2 more terms" in text and text.endswith("have an admin label a node.")
    assert len(text) < 1000


# --- both languages -------------------------------------------------------------------------------

SAID = "0/4 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}, 3 Insufficient nvidia.com/gpu."
KUEUE_SAID = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 2 more needed"
PROBLEM = "the Kubernetes API did not answer (HTTP 503: Service Unavailable)"
# Every cause, in each of its forms (the fixtures' names and the scheduler's and Kueue's words are shown as they are).
CAUSES = (
    NotAdvertised("nvidia.com/gpus", Mistake.TYPO, GPU, (GPU,)),
    NotAdvertised(GPU, Mistake.WHOLE_GPU_ON_MIG, None, ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb")),
    NotAdvertised("nvidia.com/mig-2g.20gb", Mistake.MIG_PROFILE, None, ()),
    NotAdvertised("nvidia.com/mig-2g.20gb", Mistake.MIG_PROFILE, "nvidia.com/mig-3g.40gb", ("nvidia.com/mig-3g.40gb",)),
    NotAdvertised(GPU, Mistake.NO_DEVICE_PLUGIN, None, ()),
    NotAdvertised("example.com/fpga", Mistake.UNKNOWN, None, ()),
    NotAdvertised("example.com/fpga", Mistake.UNKNOWN, None, ("example.com/asic",)),
    QUOTA,
    QuotaFull(NS, GPU, None, 4, 4, (), FIX),
    QuotaFull(NS, GPU, 2, 4, 4, (), FIX),
    QuotaFull(NS, GPU, None, 4, 4, tuple(f"holder-{i}" for i in range(12)), FIX),
    QueueWait(NS, GPU, "cq", "h100", "wl", 8, 8, 2, 3, 5, KUEUE_SAID, False, FIX),
    QueueWait(NS, GPU, "cq", "h100", "wl", None, None, None, None, 0, "", True, None),
    QueueWait(NS, GPU, "cq", "h100", "wl", 8, 8, None, 1, 1, "", False, None),
    Gated(("kueue.x-k8s.io/admission",)),
    Gated(("example.com/wait-for-data",)),
    SelectorMismatch((("gpu", "h200"),), (), (LabelValues("gpu", ("a100", "h100")),), True, ()),
    SelectorMismatch((), (SelectorTerm((Requirement("pool", "In", ("h100",)),)),), (LabelValues("pool", ()),), True, ()),
    SelectorMismatch(
        (("gpu", "h200"),),
        (SelectorTerm((Requirement("pool", "In", tuple(f"p{i}" for i in range(12))), Requirement("zone", "Exists", ()))),) * 4,
        (LabelValues("gpu", ("a100",)), LabelValues("zone", ())),
        False,
        ("gpu-1", "gpu-2"),
    ),
    SelectorMismatch((), (), (), True, ()),
    SelectorMismatch((("gpu", "h200"),), (), (), False, ("gpu-1",)),
    SelectorMismatch((), (SelectorTerm((Requirement("pool", "In", ("h100",)),)),), (), False, ("gpu-1",)),
    SelectorMismatch((), (), (), False, ("gpu-1",)),
    TAINT,
    UntoleratedTaint(
        Taint(GPU, "", "NoExecute"), ("gpu-1", "gpu-2"), False, ("gpu-2",), Toleration(GPU, "Exists", "", "NoExecute")
    ),
    UntoleratedTaint(
        Taint(GPU, "", "NoExecute"), ("gpu-1", "gpu-2"), False, ("gpu-1", "gpu-2"), Toleration(GPU, "Exists", "", "NoExecute")
    ),
    NodesUnavailable(("gpu-2",), (), True, ()),
    NodesUnavailable(("gpu-2",), ("gpu-3",), False, ("gpu-3",)),
    NodesUnavailable((), ("gpu-3",), True, ()),
    NoCapacity(
        GPU,
        4,
        (FreeBlock("h100", "NVIDIA-H100", 2, 3), FreeBlock("a100", "a100", 1, 1), FreeBlock("", None, 3, 2)),
        6,
        ScaleUp("Healthy", ("h100",), ("a100",), (("spot", "QuotaExceeded: out of quota"), ("other", ""))),
    ),
    NoCapacity(GPU, 4, (), 0, None),
    NoCapacity(GPU, 4, (FreeBlock("h100", None, 2, 1),), 2, ScaleUp("", (), (), ())),
    NoCapacity(GPU, 4, (FreeBlock("h100", None, 2, 1),), 2, ScaleUp("Healthy", (), (), ())),
    NoCapacity(GPU, 4, (FreeBlock("h100", None, 2, 1),), 2, ScaleUp("", ("h100",), (), ())),
    PriorityStanding("low", 100, True, (HeldBy("high", 1000, 8),), 0, 0, None),
    PriorityStanding("never", 500, False, (HeldBy("", 0, 8),), 8, 0, None),
    PriorityStanding("high", 1000, True, (), 8, 3, "gpu-3"),
    PriorityStanding("", 0, True, (HeldBy("", 0, 1),), 1, 1, None),
    FitsNow(("gpu-4",)),
    FitsNow(tuple(f"gpu-{i}" for i in range(10))),
)
NAMES = (
    NS, "train", "train-job", "serve", "trian", "holder-a", "cq", "h100", "a100", "wl", "spot", "other",
    "Healthy", "Running", "Pending", "NVIDIA-H100", SAID, KUEUE_SAID, PROBLEM, "QuotaExceeded: out of quota",
    "kueue.x-k8s.io/admission", "example.com/wait-for-data", "only the scheduler knows",
)  # fmt: skip
ANSWERS = (
    answer(*CAUSES[:20], said=SAID),
    answer(*CAUSES[20:], said=SAID, actions=(Action(ActionKind.REQUEST_MORE, ButtonLabel.REQUEST_MORE, FIX.value, "primary"),)),
    answer(FitsNow(("gpu-1",)), kind="Job", name="train-job", others_pending=1),
    answer(
        QUOTA,
        kind="Deployment",
        name="train-job",
        others_pending=3,
        unchecked=(
            CouldNotCheck(Check.NODES, PROBLEM, "list nodes"),
            *(CouldNotCheck(check, PROBLEM) for check in Check),
        ),
    ),  # fmt: skip
    WhyAnswer(NS, "Job", "train-job", Diagnosis(NS, None, {}, ())),
    WhyAnswer(NS, "Job", "train-job", Diagnosis(NS, None, {}, (QUOTA,))),
    answer(said="only the scheduler knows"),
    WhyAnswer(NS, "Pod", "train", Diagnosis(NS, "train", {GPU: 2}, (FitsNow(("gpu-1",)),), SchedulerWords(SAID, 1, None))),
    WhyAnswer(NS, "Pod", "train", Diagnosis(NS, "train", {GPU: 2}, (), SchedulerWords(SAID, 5, None))),
    WhyAnswer(NS, "Pod", "serve", Scheduled(NS, "serve", "gpu-1", "Running", T0, {GPU: 2})),
    WhyAnswer(NS, "Pod", "serve", Scheduled(NS, "serve", "gpu-1", "Running", None, {})),
    WhyAnswer(NS, "Job", "serve", Scheduled(NS, "serve", "gpu-1", "Pending", T0, {GPU: 1})),
    WhyAnswer(NS, "Pod", "serve", Scheduled(NS, "serve", "gpu-1", "Pending", None, {GPU: 1})),
)
SHORT_ANSWERS = (
    Unanswered(NS, "train"),
    Unanswered(NS, None),
    Unanswered(NS, "train", CouldNotCheck(Check.POD, PROBLEM)),
    Unanswered(NS, None, CouldNotCheck(Check.PODS, PROBLEM, "list pods -n ai-frontier-research")),
    PickAPod(NS, None, ()),
    PickAPod(NS, "trian", ()),
    PickAPod(NS, "trian", (PendingChoice("train", {GPU: 2}),)),
    PickAPod(NS, None, tuple(PendingChoice(f"pod-{i}", {GPU: 1}) for i in range(25))),
)


@pytest.mark.parametrize("language", list(Language))
def test_every_cause_is_worded_in_each_language(language: Language) -> None:
    with speaking(language), catalog_misses() as missed:
        texts = [cause_text(cause, in_modal=in_modal) for cause in CAUSES for in_modal in (False, True)]
    assert missed == set()
    assert all(text and len(text) < 3000 for text in texts)
    if language is Language.ZH_CN:
        assert {text: words for text in texts if (words := foreign_words(text, values=NAMES))} == {}


@pytest.mark.parametrize("language", list(Language))
def test_every_answer_is_worded_within_block_kit_limits_in_each_language(language: Language) -> None:
    with speaking(language), catalog_misses() as missed:
        messages = [why_blocks(outcome) for outcome in (*ANSWERS, *SHORT_ANSWERS)]
        modals = [answer_view(outcome).to_dict() for outcome in (*ANSWERS, *SHORT_ANSWERS)]  # slack_sdk validates
        fallbacks = [why_text(outcome) for outcome in (*ANSWERS, *SHORT_ANSWERS)]
    assert missed == set()
    for message in messages:
        assert_valid_message(message)
    assert all(len(modal["blocks"]) <= 100 and len(modal["title"]["text"]) <= 24 for modal in modals)
    if language is Language.ZH_CN:
        texts = [text_of(message) for message in messages] + [text_of(modal["blocks"]) for modal in modals] + fallbacks
        buttons = [e["text"]["text"] for m in messages for b in m if b["type"] == "actions" for e in b["elements"]]
        assert buttons == ["申请 +2 块 GPU"]  # the amount in Chinese too (resources.amount_of)
        assert {text: words for text in texts if (words := foreign_words(text, values=NAMES))} == {}


def visible_texts(view: dict) -> list[str]:
    """What a person reads of a form: its title and buttons, the texts of its blocks, the select's label,
    placeholder and options."""
    texts = [view["title"]["text"], view.get("submit", {}).get("text", ""), view["close"]["text"]]
    for block in view["blocks"]:
        texts += [block["text"]["text"]] if "text" in block else []
        texts += [element["text"] for element in block.get("elements", []) if "text" in element]
        if block["type"] == "input":
            element = block["element"]
            texts += [block["label"]["text"], element["placeholder"]["text"]]
            texts += [option["text"]["text"] for option in element["options"]]
    return texts


@pytest.mark.parametrize("language", list(Language))
def test_the_pick_form_keeps_its_limits_in_each_language(language: Language) -> None:
    pods = tuple(PendingChoice(f"pod-{i:03d}-" + "x" * 80, {GPU: 1}) for i in range(120)) + (PendingChoice("y" * 200, {GPU: 1}),)
    short = (PendingChoice("train", {GPU: 2}), PendingChoice("serve", {GPU: 1}))
    with speaking(language), catalog_misses() as missed:
        long_forms = [pick_form(PickAPod(NS, missing, pods)).to_dict() for missing in (None, "trian")]
        short_forms = [pick_form(PickAPod(NS, missing, short)).to_dict() for missing in (None, "trian")]
    assert missed == set()
    for data in long_forms + short_forms:
        (select,) = [b for b in data["blocks"] if b["type"] == "input"]
        assert all(len(o["text"]["text"]) <= 75 for o in select["element"]["options"])
        assert len(data["title"]["text"]) <= 24 and Block.parse(data["blocks"][0]) is not None
    if language is Language.ZH_CN:
        assert "另有 21 个未列出" in json.dumps(long_forms[0], ensure_ascii=False)
        texts = [text for data in short_forms for text in visible_texts(data)]
        assert "train（2 块 GPU）" in texts and "`trian`" in " ".join(texts)
        assert {text: words for text in texts if (words := foreign_words(text, values=NAMES))} == {}
