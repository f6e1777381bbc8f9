"""The dependency direction of the style guide, checked on the import statements.

Handlers and jobs -> services -> domain; adapters implement the services' ports; only the wiring
module (``bot.bootstrap``) and the entry points import everything. Services and the domain name no
adapter at all, not even under ``if TYPE_CHECKING:`` (they work on the domain's entities).
"""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).parents[1]


def runtime_imports(path: Path, *, type_only_too: bool = False) -> set[str]:
    """Modules imported by ``path`` when it runs (anywhere but an ``if TYPE_CHECKING:`` block), or at
    all when ``type_only_too``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        type_only = isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        if type_only and not type_only_too:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return found


def offending(paths: list[Path], *prefixes: str, type_only_too: bool = False) -> dict[str, list[str]]:
    result = {}
    for path in paths:
        imported = runtime_imports(path, type_only_too=type_only_too)
        bad = sorted(m for m in imported if any(m == p or m.startswith(p + ".") for p in prefixes))
        if bad:
            result[str(path.relative_to(ROOT))] = bad
    return result


def module_graph(package: Path) -> dict[str, set[str]]:
    """Each module of ``package`` (a folder under ROOT) and the modules of that package it imports,
    type-only imports included (a circle of types is a circle of ideas too)."""
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                imported.add(node.module)
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {m for m in imported if m in modules and m != name}
    return graph


def import_circle(package: Path) -> list[str]:
    """One circle of imports among the modules of ``package`` (the first module repeated at its end), or []."""
    try:
        TopologicalSorter(module_graph(package)).prepare()
    except CycleError as error:
        return list(error.args[1])
    return []


def test_no_import_circle_anywhere_in_bot() -> None:
    assert import_circle(ROOT / "bot") == []


def test_handlers_import_no_other_handler() -> None:
    """Shared replies live in ``handlers.replies``; a listener module never reaches into another one."""
    graph = module_graph(ROOT / "handlers")
    shared = {"handlers", "handlers.replies", "handlers.outcome"}
    crossing = {name: sorted(imported - shared) for name, imported in graph.items() if name not in shared and imported - shared}
    assert crossing == {}


def test_the_circle_check_finds_a_circle_through_type_only_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import C\n")
    (package / "c.py").write_text("from pkg.a import something\n")
    circle = import_circle(package)
    assert circle[0] == circle[-1] and set(circle) == {"pkg.a", "pkg.b", "pkg.c"}
    (package / "c.py").write_text("import json\n")
    assert import_circle(package) == []


# How adapters are made: ``Class.factory(...)`` and plain constructors.
ADAPTER_FACTORIES = {("Database", "from_url"), ("KubernetesCluster", "from_environment"), ("PrometheusMetrics", "connect")}
ADAPTER_CONSTRUCTORS = {
    "make_web_client",
    "SlackNotifier",
    "SlackDirectory",
    "SlackHomeTabs",
    "KubernetesCluster",
    "KueueCluster",
    "ClusterSet",
    "KarmadaPlane",
    "PrometheusMetrics",
    "ClusterMetrics",
    "SmtpMailer",
}


def adapters_built(path: Path) -> list[str]:
    """The adapter factories and constructors ``path`` calls, as ``line: name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            if (function.value.id, function.attr) in ADAPTER_FACTORIES:
                found.append(f"{node.lineno}: {function.value.id}.{function.attr}")
        elif isinstance(function, ast.Name) and function.id in ADAPTER_CONSTRUCTORS:
            found.append(f"{node.lineno}: {function.id}")
    return found


def test_adapters_are_built_in_the_bootstrap_only() -> None:
    """``run``, the shell and the CLIs get their database, cluster, Prometheus and Slack from ``bot.bootstrap``."""
    paths = [p for folder in ("bot", "handlers", "jobs") for p in sorted((ROOT / folder).rglob("*.py"))]
    outside = [p for p in paths if p != ROOT / "bot" / "bootstrap.py" and (ROOT / "bot" / "adapters") not in p.parents]
    built = {str(p.relative_to(ROOT)): adapters_built(p) for p in outside}
    assert {path: calls for path, calls in built.items() if calls} == {}


def test_the_adapter_check_sees_factories_and_constructors(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text("a = Database.from_url(u)\nb = SlackNotifier(client)\nc = Database.something(u)\nd = other(u)\n")
    assert adapters_built(module) == ["1: Database.from_url", "2: SlackNotifier"]


def test_handlers_and_jobs_never_import_the_wiring_module() -> None:
    """Not even for types: the ``Services`` they receive lives with the services."""
    paths = sorted((ROOT / "handlers").glob("*.py")) + sorted((ROOT / "jobs").glob("*.py"))
    assert offending(paths, "bot.bootstrap", "bot.server", type_only_too=True) == {}


def test_services_reach_the_database_and_sqlalchemy_only_through_their_ports() -> None:
    paths = sorted((ROOT / "bot" / "services").glob("*.py"))
    assert offending(paths, "bot.adapters.db", "sqlalchemy", "bot.bootstrap") == {}


def test_services_and_the_domain_never_name_an_adapter_or_sqlalchemy_not_even_for_types() -> None:
    """They work on the domain's entities (``bot.domain.entities``, ``bot.domain.records``); the database
    adapter maps those onto its tables, and no service or domain module names a row class."""
    paths = sorted((ROOT / "bot" / "services").glob("*.py")) + sorted((ROOT / "bot" / "domain").glob("*.py"))
    assert offending(paths, "bot.adapters", "sqlalchemy", type_only_too=True) == {}


def test_the_metrics_endpoint_counts_requests_through_the_repository() -> None:
    assert offending([ROOT / "bot" / "observability.py"], "bot.adapters", "sqlalchemy") == {}


def test_the_check_sees_imports_that_run_and_skips_type_only_ones(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "import sqlalchemy.orm\n"
        "if TYPE_CHECKING:\n"
        "    from bot.adapters.db.models import RequestRow\n"
        "def f() -> None:\n"
        "    from bot.bootstrap import build_services\n"
    )
    assert runtime_imports(module) == {"typing", "sqlalchemy.orm", "bot.bootstrap"}
    assert "bot.adapters.db.models" in runtime_imports(module, type_only_too=True)


# Services say what happened as outcomes (``bot.services.outcomes``); the Slack edge makes the words.
WORDLESS_SERVICES = [
    "access",
    "announce",
    "blocked",
    "budget",
    "capacity",
    "cards",
    "changes",
    "container",
    "decisions",
    "digest",
    "doctor",
    "effects",
    "failures",
    "home",
    "idle",
    "inbox",
    "ledger",
    "lifecycle",
    "mail_messages",
    "messages",
    "metrics_health",
    "monthly_close",
    "outcomes",
    "pods",
    "ports",
    "pricing",
    "proposals",
    "queries",
    "quota_sync",
    "quota_target",
    "reclaim",
    "reconcile",
    "refusals",
    "reports",
    "request_rows",
    "requests",
    "shift_apply",
    "shifts",
    "spend",
    "stores",
    "submissions",
    "text",
    "views",
    "why",
]
# Not converted yet (a shrinking list; empty now: every service module is wordless). Everything said in
# threads, direct messages and posts is a typed message (``bot.services.messages``), a use case's refusal a
# typed ``Refused`` (``bot.services.refusals``), a report typed data (``bot.services.reports``), all worded
# at the Slack edge.
SERVICES_WITH_WORDS: list[str] = []
EMOJI = re.compile(r":[a-z0-9_+-]+:")
BOLD = re.compile(r"(^|\s)\*[^*\s][^*]*\*")
PHRASE = re.compile(r"^(\S+ ){4,}\S+$")
SENTENCE = re.compile(r"^[A-Z][a-z']*( [^ ]+){2,}[.!?]$|[a-z]{2,}[.!?] [A-Z]")


def words_in(path: Path, *, phrases: bool = False) -> list[str]:
    """The string literals of ``path`` that are words for people (``line: text``): an emoji shortcode,
    mrkdwn bold or a sentence, raised ones included (a refusal is words for the person too); with
    ``phrases``, any text of five words or more too (a reason such as "the grant of {} has already
    ended"). Docstrings, log calls and assertions' messages (for developers) are not counted."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skipped.add(id(body[0].value))
        logged = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
        if logged and node.func.value.id == "log":  # type: ignore[union-attr]
            skipped.update(id(child) for child in ast.walk(node))
        if phrases and isinstance(node, ast.Assert) and node.msg is not None:
            skipped.update(id(child) for child in ast.walk(node.msg))
    said: set[int] = set()  # the parts of a notice (``say(...)``) are words however short
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "say":
            said.update(id(child) for child in ast.walk(node))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in skipped:
            # An f-string is one text: its pieces are read together, each value standing as "{}".
            skipped.update(id(child) for child in ast.walk(node) if child is not node)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values).strip()
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            text = node.value.strip()
        else:
            continue
        if id(node) not in skipped:
            wordy = id(node) in said and re.search(r"[a-z]{2,}", text)
            phrase = phrases and PHRASE.search(text)
            if wordy or phrase or EMOJI.search(text) or BOLD.search(text) or SENTENCE.search(text):
                found.append((node.lineno, text[:60]))
    return [f"{line}: {text}" for line, text in sorted(found)]


# Phrases still made in services (a shrinking list, #19's last step and #24's first): what they say.
PHRASES_LEFT: dict[str, str] = {}
# Phrases for operators, not for a person in Slack: they reach only logs, a job's run result (logged by
# ``jobs.run_job``) or the outbox's error column, never a message. Each is named exactly (its text as
# ``words_in`` shows it), so a new phrase in these modules is still caught.
PHRASES_FOR_OPERATORS = {
    "announce": (
        "the error column of an outbox entry given up on (and its log line)",
        {"the request message was never posted", "SMTP_URL is not set, so the bot sends no mail"},
    ),
    "proposals": (
        "the proposals job's skip reasons: its run result, which only the job's log line shows",
        {
            "no kube_resourcequota series in Prometheus",
            "no sign of a shortage: no quota-blocked alerts in the last {",
            "only {} of the last {} days were measured",
            "no namespace both short and with spare GPUs",
        },
    ),
}


def _phrases_for_people(path: Path) -> list[str]:
    exempt = PHRASES_FOR_OPERATORS.get(path.stem, ("", set()))[1]
    return [found for found in words_in(path, phrases=True) if found.split(": ", 1)[1] not in exempt]


def test_services_make_no_phrase_outside_the_known_remainder() -> None:
    """Five words or more made in a service are words for someone: typed data, worded at the edge, is the
    goal; the modules that still make them are named above, and the list only shrinks."""
    found = {p.stem for p in (ROOT / "bot" / "services").glob("*.py") if _phrases_for_people(p)}
    assert (sorted(found - set(PHRASES_LEFT)), sorted(set(PHRASES_LEFT) - found)) == ([], [])


def test_every_phrase_exempted_for_operators_is_still_made() -> None:
    """The exemptions only shrink: a phrase gone (or reworded) is taken off the list."""
    made = {
        name: {found.split(": ", 1)[1] for found in words_in(ROOT / "bot" / "services" / f"{name}.py", phrases=True)}
        for name in PHRASES_FOR_OPERATORS
    }
    assert {name: sorted(texts - made[name]) for name, (_, texts) in PHRASES_FOR_OPERATORS.items()} == {
        name: [] for name in PHRASES_FOR_OPERATORS
    }


def test_converted_services_make_no_sentence_emoji_or_markup() -> None:
    paths = {name: ROOT / "bot" / "services" / f"{name}.py" for name in WORDLESS_SERVICES}
    assert {name: found for name, path in paths.items() if (found := words_in(path))} == {}


def test_every_service_module_is_listed_as_wordless_or_not_yet() -> None:
    """A new service module starts wordless, or is named here with a reason; the remainder only shrinks."""
    modules = {p.stem for p in (ROOT / "bot" / "services").glob("*.py")} - {"__init__"}
    listed = set(WORDLESS_SERVICES) | set(SERVICES_WITH_WORDS)
    wordless_already = [name for name in SERVICES_WITH_WORDS if not words_in(ROOT / "bot" / "services" / f"{name}.py")]
    assert (sorted(modules - listed), wordless_already) == ([], [])


def test_the_word_check_sees_emoji_bold_and_sentences(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        '"""A docstring. It is fine."""\n'
        'a = ":x: Could not"\n'
        'b = "made *bold* here"\n'
        'c = "You approved it."\n'
        'd = "refused when approved"\n'
        'log.info("Logged words are fine.")\n'
        'raise UserError("Refusals are words too.")\n'
        'e = say("was denied by ", User(u))\n'
        'f = f"You cannot {verdict} your own request {x}."\n'
        'g = f"{namespace}/{name}: {count:>{width}}"\n'
    )
    assert [line.split(":")[0] for line in words_in(module)] == ["2", "3", "4", "7", "8", "9"]
    phrased = tmp_path / "phrased.py"
    phrased.write_text('reason = f"the grant of {x} has already ended"\nassert x, "a message for developers only here"\n')
    assert [line.split(":")[0] for line in words_in(phrased, phrases=True)] == ["1"] and words_in(phrased) == []
