"""GPU resource names: MIG profiles, kube-state-metrics labels, and the words people type for them."""

from fractions import Fraction

import pytest

from bot.domain.quota import stamp_annotations
from bot.domain.resources import (
    GPU,
    Resolved,
    Unresolved,
    is_resource_name,
    metrics_label,
    mig_profile,
    mig_resource,
    quota_key,
    resolve,
)

GOVERNED = (GPU, "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb")


def test_quota_key_is_the_requests_form():
    assert quota_key("nvidia.com/mig-3g.40gb") == "requests.nvidia.com/mig-3g.40gb"


@pytest.mark.parametrize(
    ("resource", "label"),
    [(GPU, "nvidia_com_gpu"), ("nvidia.com/mig-3g.40gb", "nvidia_com_mig_3g_40gb"), ("gpu.intel.com/i915", "gpu_intel_com_i915")],
)
def test_metrics_label_matches_kube_state_metrics(resource, label):
    assert metrics_label(resource) == label


@pytest.mark.parametrize(
    ("resource", "slices", "fraction"),
    [
        ("nvidia.com/mig-1g.10gb", 1, Fraction(1, 7)),
        ("nvidia.com/mig-3g.71gb", 3, Fraction(3, 7)),
        ("nvidia.com/mig-7g.141gb", 7, 1),
    ],
)
def test_mig_profiles_take_g_of_seven_slices(resource, slices, fraction):
    profile = mig_profile(resource)
    assert profile is not None and profile.slices == slices and profile.compute_fraction == fraction


def test_media_profiles_are_advertised_with_dot_me():
    profile = mig_profile("nvidia.com/mig-1g.10gb.me")
    assert profile is not None and profile.name == "1g.10gb+me"
    assert mig_resource("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
    assert mig_resource("3g.40gb") == "nvidia.com/mig-3g.40gb"


@pytest.mark.parametrize(
    "resource", [GPU, "nvidia.com/gpu.shared", "amd.com/gpu", "nvidia.com/mig-8g.10gb", "example.com/mig-1g.10gb"]
)
def test_other_resources_are_not_mig(resource):
    assert mig_profile(resource) is None


def test_dcgm_values_that_are_not_profiles_name_no_resource():
    assert mig_resource("") is None and mig_resource("whole") is None


@pytest.mark.parametrize("name", [GPU, "amd.com/gpu", "gpu.intel.com/i915", "nvidia.com/mig-1g.10gb.me"])
def test_vendor_resource_names_are_valid(name):
    assert is_resource_name(name)


@pytest.mark.parametrize("name", ["gpu", "nvidia.com/", "/gpu", "Nvidia.com/gpu", "nvidia.com/gpu/x"])
def test_names_without_a_vendor_are_not_valid(name):
    assert not is_resource_name(name)


@pytest.mark.parametrize(
    ("word", "resource"),
    [
        ("mig-3g.40gb", "nvidia.com/mig-3g.40gb"),
        ("3g.40gb", "nvidia.com/mig-3g.40gb"),
        ("3g", "nvidia.com/mig-3g.40gb"),
        ("gpu", GPU),
        ("nvidia.com/gpu", GPU),
        ("MIG-1G.10GB", "nvidia.com/mig-1g.10gb"),
    ],
)
def test_a_word_matching_one_governed_resource_names_it(word, resource):
    assert resolve(word, GOVERNED) == Resolved(resource)


def test_an_ambiguous_word_lists_what_it_could_mean():
    assert resolve("mig", GOVERNED) == Unresolved("mig", ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"))


def test_an_unknown_word_has_no_candidates():
    assert resolve("mig-2g.20gb", GOVERNED) == Unresolved("mig-2g.20gb", ())


def test_no_word_names_the_only_governed_resource_or_asks():
    assert resolve(None, (GPU,)) == Resolved(GPU)
    assert resolve(None, GOVERNED) == Unresolved("", GOVERNED)


def test_whole_gpus_keep_the_stamp_every_earlier_release_wrote_and_other_resources_get_their_own() -> None:
    assert stamp_annotations(GPU) == ("gpu-quota-bot.io/applied-gpus", "gpu-quota-bot.io/applied-by")
    assert stamp_annotations("nvidia.com/mig-3g.40gb") == (
        "gpu-quota-bot.io/applied.nvidia.com_mig-3g.40gb",
        "gpu-quota-bot.io/applied-by.nvidia.com_mig-3g.40gb",
    )
