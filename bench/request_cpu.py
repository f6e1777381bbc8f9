"""CPU of one `/gpu-quota request` in one process, and where it goes.

The sandbox app (SQLite, the Slack and Kubernetes stand-ins on loopback in this process) with the
work after the ack run inline in the request's thread: the thread's CPU time over N signed slash
commands dispatched into the real Bolt app is the bot's CPU per request, without waitress and
without the stand-ins' own CPU (they answer on other threads). ``--profile`` prints the functions
that take it (cProfile on the thread's CPU clock; its overhead inflates pure-Python code most).
``--tls`` serves both stand-ins over HTTPS, as slack.com and a Kubernetes API server are reached (a
throwaway certificate, which the bot's clients trust): plain loopback HTTP hides what a new
connection costs.

    .venv/bin/python bench/request_cpu.py                      # CPU per request (5 rounds of 300)
    .venv/bin/python bench/request_cpu.py --tls                # the same over HTTPS
    .venv/bin/python bench/request_cpu.py --profile --top 40  # and the profile, by cumulative time
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.adapters.slack.http import bolt_request  # noqa: E402
from bot.executor import TrackingExecutor  # noqa: E402
from bot.sandbox.certificate import Certificate  # noqa: E402
from bot.sandbox.session import Sandbox  # noqa: E402

COMMAND = "request ai-frontier-research +1 for 1d benchmark run"
WARM_UP = 30


class InlineExecutor(TrackingExecutor):
    """Runs the work after the ack in the acking thread, so that thread's CPU is the whole request's."""

    def hand_off(
        self,
        work: Callable[[], object],
        *,
        ack: Callable[[], object],
        busy_ack: Callable[[], object],
        busy_notice: Callable[[], object] | None = None,
    ) -> bool:
        ack()
        work()
        return True

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds: the lowest and the median are printed")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the requests (thread CPU clock)")
    parser.add_argument("--top", type=int, default=40, help="functions to print with --profile")
    parser.add_argument("--tls", action="store_true", help="the Slack and Kubernetes stand-ins over HTTPS")
    args = parser.parse_args()

    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="request-cpu-") as tmp:
        box = Sandbox(tls=Certificate.make(Path(tmp)) if args.tls else None)
        box.executor = InlineExecutor()
        box.start()
        assert box.app is not None and box.side is not None
        app, side = box.app, box.side

        def one() -> None:
            body = side.slash_command(user_id="U0ALICE", text=COMMAND)
            response = app.dispatch(bolt_request(body, side.sign(body)))
            assert response.status == 200, response.body

        try:
            for _ in range(WARM_UP):
                one()
            profile = cProfile.Profile(time.thread_time) if args.profile else None
            if profile is not None:
                profile.enable()
            per_request = []
            for _ in range(1 if profile else args.rounds):
                started = time.thread_time()
                for _ in range(args.requests):
                    one()
                per_request.append((time.thread_time() - started) / args.requests * 1000)
            if profile is not None:
                profile.disable()
                pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
            answers = [r.text for r in box.slack.records if r.kind == "response"]
            assert answers and "submitted" in answers[-1], answers[-1:]
            sent = WARM_UP + args.requests * len(per_request)
            assert box.kube is not None
            slack_calls = len(box.slack.calls) + len(answers)
            calls = f"Slack {slack_calls / sent:.1f}, Kubernetes {len(box.kube.log) / sent:.1f}"
            connections = f"Slack {box.slack.connections}, Kubernetes {box.kube.connections}"
        finally:
            box.stop()
    note = " (profiled: inflated)" if args.profile else f" (lowest of {args.rounds} rounds of {args.requests})"
    print(
        f"CPU per `request`, handling thread, work inline, {'HTTPS' if args.tls else 'HTTP'}: {min(per_request):.2f} ms{note}, "
        f"median {statistics.median(per_request):.2f} ms; calls per request {calls}; connections {connections}; load average {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
