"""``gpu-quota-bot doctor``: the GPU stack's checklist in the terminal, one line per check
(``ok / warning / BROKEN  <evidence> -> <fix>``, or ``could not check``).

Its language is ``--lang`` (en, zh-CN), else the policy's ``language`` (en unless set): the status words, the
evidence and the fixes are in it; names, metrics and what the API server said are shown as they are.
Exit 1 when a check is broken, 0 otherwise (warnings and checks it could not do included: their lines say
why); 2 for a settings problem (no policy, a kubeconfig or context that does not load), as every command.
Reads only: nothing is written to a cluster, Prometheus or the database.
"""

from __future__ import annotations

import argparse
import sys

from bot.adapters.i18n import speaking, tr
from bot.adapters.slack.doctor_words import plain_lines
from bot.bootstrap import standalone_doctor
from bot.domain.languages import Language, parse_language
from bot.domain.policy import load_policy
from bot.services.doctor import Refusal
from bot.settings import SettingsError, load_settings
from bot.startup_checks import SettingsProblem, load_cluster

SETTINGS_EXIT = 2


def _language(tag: str) -> Language:
    language = parse_language(tag)
    if language is None:
        raise argparse.ArgumentTypeError(f"not a language of the bot: {tag} (en or zh-CN)")
    return language


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", help="one cluster of the policy (default: every cluster)")
    parser.add_argument(
        "--lang", type=_language, metavar="en|zh-CN", help="the language of the lines (default: the policy's language)"
    )


def run(args: argparse.Namespace) -> int:
    chosen: Language | None = args.lang
    with speaking(chosen or Language.EN):
        try:
            settings = load_settings()
        except SettingsError as error:
            raise SettingsProblem(str(error)) from None
        if settings.gpu_quota_config is None:
            raise SettingsProblem(tr("doctor needs GPU_QUOTA_CONFIG (the policy names the clusters and namespaces it checks)"))
        policy = load_policy(settings.gpu_quota_config)
    with speaking(chosen or policy.language):
        for context in [cluster.context for cluster in policy.clusters.values()] or [None]:
            load_cluster(settings.kubeconfig, context=context, timeout=(5.0, 10.0))
        answer = standalone_doctor(settings, policy).examine_named(args.cluster)
        if isinstance(answer, Refusal):
            cluster = repr(answer.cluster)
            if answer.known:
                said = tr(
                    "gpu-quota-bot: no cluster {cluster} in the policy (its clusters: {known})",
                    cluster=cluster,
                    known=", ".join(answer.known),
                )
            else:
                said = tr("gpu-quota-bot: no cluster {cluster} in the policy (it names none)", cluster=cluster)
            print(said, file=sys.stderr)
            return SETTINGS_EXIT
        names = {part: policy.cluster_label(part) for part in policy.cluster_names()}
        for line in plain_lines(answer, names):
            print(line)
        return 1 if answer.broken else 0
