"""``gpu-quota-bot doctor``: the GPU stack's checklist in the terminal, one line per check
(``ok / warning / BROKEN  <evidence> -> <fix>``, or ``could not check``).

Exit 1 when a check is broken, 0 otherwise (warnings and checks it could not do included: their lines say
why); 2 for a settings problem (no policy, a kubeconfig or context that does not load), as every command.
Reads only: nothing is written to a cluster, Prometheus or the database.
"""

from __future__ import annotations

import argparse
import sys

from bot.adapters.slack.doctor_words import plain_lines
from bot.bootstrap import standalone_doctor
from bot.domain.policy import load_policy
from bot.services.doctor import Refusal
from bot.settings import SettingsError, load_settings
from bot.startup_checks import SettingsProblem, load_cluster

SETTINGS_EXIT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", help="one cluster of the policy (default: every cluster)")


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except SettingsError as error:
        raise SettingsProblem(str(error)) from None
    if settings.gpu_quota_config is None:
        raise SettingsProblem("doctor needs GPU_QUOTA_CONFIG (the policy names the clusters and namespaces it checks)")
    policy = load_policy(settings.gpu_quota_config)
    for context in [cluster.context for cluster in policy.clusters.values()] or [None]:
        load_cluster(settings.kubeconfig, context=context, timeout=(5.0, 10.0))
    answer = standalone_doctor(settings, policy).examine_named(args.cluster)
    if isinstance(answer, Refusal):
        known = ", ".join(answer.known) or "none"
        print(f"gpu-quota-bot: no cluster {answer.cluster!r} in the policy (its clusters: {known})", file=sys.stderr)
        return SETTINGS_EXIT
    names = {part: policy.cluster_label(part) for part in policy.cluster_names()}
    for line in plain_lines(answer, names):
        print(line)
    return 1 if answer.broken else 0
