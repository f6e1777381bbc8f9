"""Clusters and namespace keys: how one bot names namespaces in several clusters. Pure.

A namespace is named as the policy names it: ``name`` in the home cluster, ``cluster/name`` in another
(``us-2/ai-frontier-research``). That *key* is what the database stores, what a ``QuotaScope`` holds and
what people read; only the adapters split it to reach the cluster (``bot.adapters.clusters``). Without
``clusters:`` in the policy every key is a bare name in the one (home) cluster, as before.
"""

from __future__ import annotations

import re

HOME = ""  # the home cluster's part of a key: none
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # an RFC 1123 label: a namespace or cluster name


def is_label(text: str) -> bool:
    """True for an RFC 1123 label (a Kubernetes namespace name, a cluster name in the policy)."""
    return _LABEL.fullmatch(text) is not None


def is_namespace_key(text: str) -> bool:
    """True for ``name`` or ``cluster/name``, both labels."""
    cluster, _, name = text.rpartition("/")
    return is_label(name) and (cluster == HOME and "/" not in text or is_label(cluster))


def split_key(key: str) -> tuple[str, str]:
    """``us-2/ns`` -> (``us-2``, ``ns``); ``ns`` -> (HOME, ``ns``)."""
    cluster, _, name = key.rpartition("/")
    return cluster, name


def namespace_key(cluster: str, name: str) -> str:
    """The key of namespace ``name`` in ``cluster`` (HOME: the bare name)."""
    return f"{cluster}/{name}" if cluster != HOME else name


def cluster_of(key: str) -> str:
    return split_key(key)[0]
