"""The configuration reference, docs/configuration.md, generated from the models that read the configuration.

Walks ``bot.settings.Settings`` (the environment) and ``bot.domain.policy.Policy`` (the policy file):
every key, its type, its default and its meaning (the field's ``description``, else its model's
docstring). A field without either is an error, so a new key cannot go undocumented. It prints and
writes nothing; a test compares its output with the file:

    .venv/bin/python -m bot.config_reference > docs/configuration.md
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Sequence
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from bot.domain.durations import format_duration
from bot.domain.policy import Cron, Policy, PriorityClassNames
from bot.settings import Settings

COMMAND = ".venv/bin/python -m bot.config_reference > docs/configuration.md"

HEADER = f"""# Configuration reference

<!-- Generated from bot/settings.py and bot/domain/policy.py by `{COMMAND}`: do not edit by hand. -->

The bot reads two things: settings from the environment (a Kubernetes Secret and the chart's `env`
in a cluster) and the policy file that `GPU_QUOTA_CONFIG` names. A wrong setting stops start-up with a
line naming it; a policy that does not validate is one line per problem, naming the key
(`gpu-quota-bot check-config` checks both, and that what they name exists). This page is generated
from the models that read them; [`deploy/config.example.yaml`](../deploy/config.example.yaml) is a
policy file with every section, commented line by line.

- [Environment](#environment)
- [The policy file](#the-policy-file)
"""

POLICY_INTRO = """## The policy file

YAML, validated when the bot starts; unknown keys are refused. Durations are written `90m`, `12h`,
`3d`, `2w` (or combinations such as `1d12h`). Slack ids: users start with U or W, user groups with S,
channels with C (or G for private ones); find them in Slack: a person's profile > "Copy member ID", a
channel's details > bottom of the "About" tab. Cron expressions have five fields (minute hour day
month weekday) and are checked with APScheduler's parser when the policy loads. `<team>` stands for a
team's key under `teams`; `namespaces[]` for each entry of a team's namespace list.
"""

# Read by the HTTP clients from the environment, not by Settings.
OTHER_VARIABLES = [
    (
        "`HTTPS_PROXY` (or `HTTP_PROXY`), `NO_PROXY`",
        "URL, host list",
        "unset",
        "the forward proxy for Slack calls, credentials in its URL if it asks for them; hosts `NO_PROXY` names are reached directly",
    )
]


def render() -> str:
    """The whole of docs/configuration.md."""
    parts = [HEADER, _environment(), POLICY_INTRO]
    for name, field in Policy.model_fields.items():
        parts.append(_section(name, field))
    return "\n".join(parts)


def _environment() -> str:
    rows = [
        (f"`{name.upper()}`", _type(field), _default(field), _meaning(f"Settings.{name}", field))
        for name, field in Settings.model_fields.items()
    ]
    lines = [
        "## Environment",
        "",
        "Read once at start-up (names are case-insensitive); secrets are never printed or logged.",
        "",
        *_table(("variable", "type", "default", "meaning"), [*rows, *OTHER_VARIABLES]),
        "",
    ]
    return "\n".join(lines)


def _section(name: str, field: FieldInfo) -> str:
    rows = [(f"`{key}`", kind, default, meaning) for key, kind, default, meaning in _keys(name, field)]
    return "\n".join([f"### {name}", "", *_table(("key", "type", "default", "meaning"), rows), ""])


def _keys(path: str, field: FieldInfo) -> Iterator[tuple[str, str, str, str]]:
    """The rows of ``path`` and of every key below it."""
    model, suffix = _nested_model(field.annotation)
    yield path, _type(field), _default(field), _meaning(path, field)
    if model is not None:
        for name, child in model.model_fields.items():
            if name == "name" and suffix == ".<team>":
                continue  # filled from the mapping key
            yield from _keys(f"{path}{suffix}.{name}", child)


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model under a field (itself, a dict's values or a tuple's items) and the path step to it."""
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    args = [_strip(a) for a in get_args(annotation)]
    model = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
    if model is None:
        return None, ""
    return model, ".<team>" if get_origin(annotation) is dict else "[]"


def _strip(annotation: Any) -> Any:
    """``X`` for ``Annotated[X, ...]`` and for ``X | None``."""
    if get_origin(annotation) is Annotated:
        return _strip(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _strip(args[0])
    return annotation


def _type(field: FieldInfo) -> str:
    if _is(field, Cron):
        kind = "cron"
    elif _is(field, PriorityClassNames):
        kind = "list of PriorityClass names"
    else:
        kind = _type_name(_strip(field.annotation))
    bounds = [_bound(m) for m in field.metadata if _bound(m)]
    return ", ".join([kind, *bounds])


def _is(field: FieldInfo, alias: Any) -> bool:
    """Whether the field is of the ``Annotated`` type ``alias``, or optionally so."""
    return any(m in field.metadata for m in get_args(alias)[1:]) or alias in get_args(field.annotation)


def _type_name(annotation: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", timedelta: "duration", Path: "path"}
    if annotation in names:
        return names[annotation]
    if annotation is SecretStr:
        return "secret"
    if get_origin(annotation) is Literal:
        return " or ".join(f"`{a}`" for a in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " or ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is dict:
        model, _ = _nested_model(annotation)
        values = "mapping" if model is not None else _type_name(_strip(args[1]))
        return f"mapping of {_type_name(args[0])} to {values}"
    if origin in (tuple, frozenset, list, set):
        item = _strip(args[0])
        if isinstance(item, type) and issubclass(item, BaseModel):
            return "list of names or mappings"
        return f"list of {_type_name(item)}s"
    raise ValueError(f"no reference name for the type {annotation!r}")


def _bound(metadata: Any) -> str:
    if isinstance(metadata, annotated_types.Ge):
        return f">= {metadata.ge}"
    if isinstance(metadata, annotated_types.Gt):
        return f"> {metadata.gt}"
    if isinstance(metadata, annotated_types.Le):
        return f"<= {metadata.le}"
    if isinstance(metadata, annotated_types.Lt):
        return f"< {metadata.lt}"
    return ""


def _default(field: FieldInfo) -> str:
    value = field.default
    if value is PydanticUndefined:
        return "required"
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, timedelta):
        return f"`{format_duration(value)}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, tuple | frozenset | list):
        return f"`[{', '.join(map(str, value))}]`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    return f'`"{value}"`' if value == "" else f"`{value}`"


def _meaning(path: str, field: FieldInfo) -> str:
    if field.description:
        return field.description
    model, _ = _nested_model(field.annotation)
    if model is not None and model.__doc__:
        return " ".join(model.__doc__.split())
    raise ValueError(f"{path} has no description: add description= to its Field")


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *(line(row) for row in rows)]


if __name__ == "__main__":
    print(render(), end="")
