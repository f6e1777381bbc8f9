"""The request form's resource choice: shown for a namespace that governs several resources, each with its
quota today, preselected when the typed word named one, within Block Kit's limits."""

from __future__ import annotations

from typing import Any

from bot.adapters.slack import ids, modals
from bot.domain.commands import GpuAmount, RequestDraft
from bot.services.views import ResourceChoice

MIG = "nvidia.com/mig-3g.40gb"
CHOICES = (
    ResourceChoice("nvidia.com/gpu", 8, 5),
    ResourceChoice(MIG, 4, 2),
    ResourceChoice("nvidia.com/mig-1g.10gb", None, None),
)


def inputs(draft: RequestDraft, choices: tuple[ResourceChoice, ...] | list[ResourceChoice]) -> dict[str, dict[str, Any]]:
    view = modals.request_form(draft, ["ns-a", "ns-b"], channel_id=None, resources=choices).to_dict()
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


def test_several_resources_give_a_select_with_each_one_s_quota_today() -> None:
    block = inputs(RequestDraft(namespace="ns-a", amount=GpuAmount(2, True)), CHOICES)[ids.RESOURCE_BLOCK]
    element = block["element"]
    assert element["type"] == "static_select" and "initial_option" not in element
    assert [(o["text"]["text"], o["value"]) for o in element["options"]] == [
        ("gpu: 5 of 8 in use", "nvidia.com/gpu"),
        ("mig-3g.40gb: 2 of 4 in use", MIG),
        ("mig-1g.10gb: quota not known", "nvidia.com/mig-1g.10gb"),
    ]
    assert block["hint"]["text"] == "The quota in ns-a when this form opened."


def test_the_choice_comes_right_after_the_namespace() -> None:
    order = list(inputs(RequestDraft(namespace="ns-a"), CHOICES))
    assert order[:3] == [ids.NAMESPACE_BLOCK, ids.RESOURCE_BLOCK, ids.GPUS_BLOCK]


def test_a_typed_word_that_names_one_resource_preselects_it() -> None:
    for word in ("mig-3g.40gb", "3g", MIG, "MIG-3G.40GB"):
        element = inputs(RequestDraft(namespace="ns-a", resource=word), CHOICES)[ids.RESOURCE_BLOCK]["element"]
        assert element["initial_option"]["value"] == MIG, word
    for word in ("mig", "h100"):  # two resources, or none
        element = inputs(RequestDraft(namespace="ns-a", resource=word), CHOICES)[ids.RESOURCE_BLOCK]["element"]
        assert "initial_option" not in element, word


def test_one_resource_or_none_gives_no_choice() -> None:
    assert ids.RESOURCE_BLOCK not in inputs(RequestDraft(), CHOICES[:1])
    assert ids.RESOURCE_BLOCK not in inputs(RequestDraft(), ())


def test_resources_sharing_a_short_name_are_shown_by_their_full_names() -> None:
    choices = (ResourceChoice("nvidia.com/gpu", 8, 1), ResourceChoice("amd.com/gpu", used=None, hard=2))
    element = inputs(RequestDraft(), choices)[ids.RESOURCE_BLOCK]["element"]
    assert [o["text"]["text"] for o in element["options"]] == ["nvidia.com/gpu: 1 of 8 in use", "amd.com/gpu: quota 2"]


def test_option_texts_stay_within_75_characters() -> None:
    long = "vendor.example/" + "a" * 120
    element = inputs(RequestDraft(), (ResourceChoice(long, 10, 1), CHOICES[0]))[ids.RESOURCE_BLOCK]["element"]
    assert all(len(o["text"]["text"]) <= 75 for o in element["options"])
    assert element["options"][0]["value"] == long and element["options"][0]["text"]["text"].endswith("…")


def test_more_than_a_select_holds_falls_back_to_typing_the_resource() -> None:
    many = [ResourceChoice(f"vendor.example/r{i}", 1, 0) for i in range(101)]
    block = inputs(RequestDraft(resource="r7"), many)[ids.RESOURCE_BLOCK]
    assert block["element"]["type"] == "plain_text_input" and block["element"]["initial_value"] == "vendor.example/r7"
    assert block["hint"]["text"].startswith("Governed: r0, r1, r2") and len(block["hint"]["text"]) <= 2000
    too_long = [ResourceChoice("vendor.example/" + "b" * 140, 1, 0), CHOICES[0]]  # a value holds 150 characters
    block = inputs(RequestDraft(resource="typed"), too_long)[ids.RESOURCE_BLOCK]
    assert block["element"]["type"] == "plain_text_input" and block["element"]["initial_value"] == "typed"
