"""The stand-ins' JSON Patch (bot/sandbox/apimachinery.py) against RFC 6902's own examples (appendix A)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.sandbox.apimachinery import PatchError, json_patch

APPLIES = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),  # A.1
    ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]}),  # A.2
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),  # A.3
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),  # A.4
    ({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"}),  # A.5
    (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),  # A.6
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),  # A.7
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),  # A.8
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),  # A.10
    ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]}),  # A.16
    (
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}, {"op": "replace", "path": "/~1", "value": 1}],
        {"/": 1, "~1": 10},
    ),  # A.14
    ({"foo": 1}, [{"op": "test", "path": "/bar", "value": None}], {"foo": 1}),  # a missing member passes a test for null
    ({"foo": 1}, [{"op": "copy", "from": "/foo", "path": "/bar"}], {"foo": 1, "bar": 1}),
]
FAILS = [
    ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),  # A.9
    ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),  # A.12
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}]),  # A.15: a string is not a number
    ({"foo": True}, [{"op": "test", "path": "/foo", "value": 1}]),  # nor is true one
    ({"foo": "bar"}, [{"op": "replace", "path": "/baz", "value": 1}]),  # replace needs the member there
    ({"foo": ["bar"]}, [{"op": "remove", "path": "/foo/1"}]),
    ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/2", "value": 1}]),
    ({"foo": 1}, [{"op": "test", "path": "/bar/baz", "value": None}]),  # a missing container fails even a test for null
    ({"foo": 1}, [{"op": "frobnicate", "path": "/foo"}]),
    ({"foo": 1}, [{"op": "replace", "path": "/foo", "value": 2}, {"op": "test", "path": "/foo", "value": 1}]),
]


@pytest.mark.parametrize(("document", "operations", "expected"), APPLIES)
def test_rfc_6902_examples_apply(document: Any, operations: list[Any], expected: Any) -> None:
    assert json_patch(document, operations) == expected


@pytest.mark.parametrize(("document", "operations"), FAILS)
def test_an_operation_that_does_not_apply_fails_the_whole_patch_and_changes_nothing(document: Any, operations: list[Any]) -> None:
    kept = repr(document)
    with pytest.raises(PatchError):
        json_patch(document, operations)
    assert repr(document) == kept
