"""What every resource of the Kubernetes API stand-in shares, as k8s.io/apimachinery and the API server have it.

``status`` is a ``Status`` failure body (``k8s.io/apimachinery/pkg/api/errors``); ``merge_patch`` is
RFC 7386 and ``json_patch`` RFC 6902 as ``github.com/evanphx/json-patch`` (the API server's library)
applies them: a JSON Patch applies every operation or none, and one that does not apply (a failed
``test``, a path that is not there) raises ``PatchError``. ``fields_match`` and ``labels_match`` are
field and label selectors; a selector the API server would refuse raises ``BadSelector``.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime, timezone
from typing import Any

from bot.sandbox.httpserver import Outgoing


def status(code: int, message: str, reason: str, details: dict[str, Any] | None = None) -> Outgoing:
    """A ``Status`` failure answer, its fields in the API server's order."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return Outgoing.json(code, body)


def now() -> str:
    """The current time as the API server writes timestamps (RFC 3339, seconds, UTC)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge_patch(target.get(key), value)
    return target


class PatchError(Exception):
    """A JSON Patch operation that does not apply; the API server answers 422 and changes nothing."""


def json_patch(document: Any, operations: list[Any]) -> Any:
    """``document`` with the RFC 6902 ``operations`` applied, all of them (a copy; ``document`` is untouched)."""
    patched = copy.deepcopy(document)
    for operation in operations:
        patched = _apply(patched, operation)
    return patched


def _apply(document: Any, operation: Any) -> Any:
    if not isinstance(operation, dict) or not isinstance(operation.get("path"), str):
        raise PatchError(f"operation missing path field: {operation!r}")
    op, path = operation.get("op"), _pointer(operation["path"])
    if op == "test":
        _test(document, path, operation.get("value"))
        return document
    if op in ("add", "replace"):
        if "value" not in operation:
            raise PatchError(f"{op} operation has no value: {operation['path']}")
        return _put(document, path, copy.deepcopy(operation["value"]), insert=op == "add")
    if op == "remove":
        _take(document, path)
        return document
    if op in ("move", "copy"):
        if not isinstance(operation.get("from"), str):
            raise PatchError(f"{op} operation has no from: {operation['path']}")
        source = _pointer(operation["from"])
        value = _take(document, source) if op == "move" else copy.deepcopy(_get(document, source))
        return _put(document, path, value, insert=True)
    raise PatchError(f"Unexpected kind: {op}")


def _pointer(path: str) -> list[str]:
    """RFC 6901: ``/a/b~1c`` is ``["a", "b/c"]``; ``~1`` is ``/`` and ``~0`` is ``~``."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"path does not start with a slash: {path}")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _parent(document: Any, path: list[str]) -> Any:
    container = document
    for token in path[:-1]:
        container = _child(container, token, path)
    return container


def _child(container: Any, token: str, path: list[str]) -> Any:
    if isinstance(container, dict) and token in container:
        return container[token]
    if isinstance(container, list) and _index(token, len(container) - 1) is not None:
        return container[int(token)]
    raise PatchError(f"doc is missing path: /{'/'.join(path)}")


def _index(token: str, highest: int) -> int | None:
    return int(token) if token.isdigit() and int(token) <= highest else None


def _get(document: Any, path: list[str]) -> Any:
    if not path:
        return document
    return _child(_parent(document, path), path[-1], path)


def _put(document: Any, path: list[str], value: Any, *, insert: bool) -> Any:
    """``add`` (``insert``: a new array element, or a member added or replaced) or ``replace`` (the value
    must be there); the whole document when ``path`` is empty."""
    if not path:
        return value
    container, key = _parent(document, path), path[-1]
    if isinstance(container, dict) and (insert or key in container):
        container[key] = value
    elif isinstance(container, list) and insert and (key == "-" or _index(key, len(container)) is not None):
        container.insert(len(container) if key == "-" else int(key), value)
    elif isinstance(container, list) and not insert and _index(key, len(container) - 1) is not None:
        container[int(key)] = value
    else:
        raise PatchError(f"{'add' if insert else 'replace'} operation does not apply: doc is missing key: /{'/'.join(path)}")
    return document


def _take(document: Any, path: list[str]) -> Any:
    if not path:
        raise PatchError("cannot remove the whole document")
    container, key = _parent(document, path), path[-1]
    if isinstance(container, dict) and key in container:
        return container.pop(key)
    if isinstance(container, list) and _index(key, len(container) - 1) is not None:
        return container.pop(int(key))
    raise PatchError(f"remove operation does not apply: doc is missing key: /{'/'.join(path)}")


_MISSING = object()


def _test(document: Any, path: list[str], wanted: Any) -> None:
    """The value at ``path`` equals ``wanted``; a missing member passes only a test for null (as the library has it)."""
    try:
        actual = _get(document, path)
    except PatchError:
        _parent(document, path)  # raises when the member's container is missing too
        actual = _MISSING
    if actual is _MISSING and wanted is None:
        return
    if actual is _MISSING or not _same(actual, wanted):
        raise PatchError(f"testing value /{'/'.join(path)} failed")


def _same(left: Any, right: Any) -> bool:
    """JSON equality: ``1`` equals ``1.0`` but not ``true``, as decoded JSON compares."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return float(left) == float(right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right


_FIELD_TERM = re.compile(r"^(?P<path>[A-Za-z0-9.]+)\s*(?P<op>!=|==|=)\s*(?P<value>.*)$")
_LABEL_SET = re.compile(r"^(?P<key>[A-Za-z0-9./_-]+)\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)$")
_LABEL_EQ = re.compile(r"^(?P<key>[A-Za-z0-9./_-]+)\s*(?P<op>!=|==|=)\s*(?P<value>[A-Za-z0-9._-]*)$")
_LABEL_EXISTS = re.compile(r"^(?P<not>!)?\s*(?P<key>[A-Za-z0-9./_-]+)$")


class BadSelector(Exception):
    """A selector the API server would refuse (HTTP 400)."""


def fields_match(item: dict[str, Any], selector: str, supported: dict[str, str]) -> bool:
    """A field selector: ``path=value``, ``path==value`` and ``path!=value`` terms, all of which must hold."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        match = _FIELD_TERM.match(term)
        if match is None:
            raise BadSelector(f"invalid selector: '{selector}'; can't understand '{term}'")
        field, op, wanted = match["path"], match["op"], match["value"]
        if field not in supported:
            raise BadSelector(f"field label not supported: {field}")
        actual: Any = item
        for part in supported[field].split("."):
            actual = actual.get(part) if isinstance(actual, dict) else None
        equal = ("" if actual is None else str(actual).lower() if isinstance(actual, bool) else str(actual)) == wanted
        if equal != (op != "!="):
            return False
    return True


def _label_terms(selector: str) -> list[str]:
    """Split on the commas between terms, not those inside ``in (a,b)``."""
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    return [t for t in terms if t]


def labels_match(labels: dict[str, str], selector: str) -> bool:
    """A label selector: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``."""
    for term in _label_terms(selector):
        if match := _LABEL_SET.match(term):
            values = {v.strip() for v in match["values"].split(",")}
            found = labels.get(match["key"]) in values
            if found != (match["op"] == "in"):
                return False
        elif match := _LABEL_EQ.match(term):
            equal = labels.get(match["key"]) == match["value"]
            if equal != (match["op"] != "!="):
                return False
        elif match := _LABEL_EXISTS.match(term):
            if (match["key"] in labels) == bool(match["not"]):
                return False
        else:
            raise BadSelector(f"unable to parse requirement: {term}")
    return True
