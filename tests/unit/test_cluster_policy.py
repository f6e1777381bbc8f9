"""Clusters in the policy: namespace keys, the home cluster, and the names people type."""

from __future__ import annotations

from typing import Any

import pytest

from bot.domain.clusters import is_namespace_key, namespace_key, split_key
from bot.domain.policy import Policy, PolicyError, parse_policy


def policy(clusters: dict[str, Any], namespaces: list[str]) -> Policy:
    return parse_policy(
        {"clusters": clusters, "teams": {"t": {"channel": "C1", "namespaces": namespaces, "approvers": {"users": ["U1"]}}}}
    )


TWO = {"eu-1": {"home": True}, "us-2": {"context": "us-2"}}


def test_keys_are_bare_in_the_home_cluster_and_cluster_slash_name_elsewhere() -> None:
    assert split_key("us-2/research") == ("us-2", "research") and split_key("research") == ("", "research")
    assert namespace_key("", "research") == "research" and namespace_key("us-2", "research") == "us-2/research"
    assert is_namespace_key("us-2/research") and is_namespace_key("research")
    assert not is_namespace_key("a/b/c") and not is_namespace_key("US-2/research") and not is_namespace_key("/research")


def test_a_typed_name_resolves_to_one_key_or_the_candidates() -> None:
    two = policy(TWO, ["research", "us-2/research", "us-2/serving"])
    assert two.namespace_key("us-2/research") == "us-2/research"
    assert two.namespace_key("eu-1/research") == "research"  # the home cluster named explicitly
    assert two.namespace_key("serving") == "us-2/serving"  # a bare name one cluster alone has
    assert two.namespace_key("research") == ("research", "us-2/research")  # ambiguous
    assert two.namespace_key("nowhere") == () and two.namespace_key("us-2/nowhere") == ()


@pytest.mark.parametrize(
    ("clusters", "namespaces", "says"),
    [
        ({"eu-1": {"home": True}, "us-2": {"home": True, "context": "c"}}, ["a"], "exactly one cluster is home"),
        ({"eu-1": {}, "us-2": {"context": "c"}}, ["a"], "exactly one cluster is home"),
        ({"eu-1": {"home": True}, "us-2": {}}, ["a"], "cluster us-2 needs a context"),
        (TWO, ["ap-3/a"], "no cluster ap-3 in clusters"),
        (TWO, ["eu-1/a"], "eu-1 is the home cluster, write a"),
        ({"EU": {"home": True}}, ["a"], "lower-case DNS labels"),
        ({}, ["us-2/a"], "no cluster us-2"),
    ],
)
def test_a_cluster_mistake_is_refused_naming_it(clusters: dict[str, Any], namespaces: list[str], says: str) -> None:
    with pytest.raises(PolicyError, match=says):
        policy(clusters, namespaces)


def test_one_cluster_alone_is_home_and_no_clusters_is_as_before() -> None:
    assert policy({"eu-1": {}}, ["a"]).home_cluster() == "eu-1"
    plain = policy({}, ["a"])
    assert plain.home_cluster() == "" and plain.cluster_names() == [""] and plain.namespace_key("a") == "a"


def test_two_clusters_of_one_name_are_refused_not_merged(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from bot.domain.policy import load_policy

    path = tmp_path / "policy.yaml"
    path.write_text(
        "clusters:\n  eu-1: {home: true}\n  us-2: {context: a}\n  us-2: {context: b}\n"
        "teams:\n  t: {channel: C1, namespaces: [a], approvers: {users: [U1]}}\n"
    )
    with pytest.raises(PolicyError, match="'us-2' is named twice in one mapping"):
        load_policy(path)
