"""CPU and time per Slack call: slack_sdk's clients (urllib, a connection per call) vs the bot's pooled ones.

Against the Slack stand-in on loopback, over plain HTTP and over HTTPS (as slack.com is reached; a
throwaway certificate made with the ``openssl`` command), N sequential ``chat.postMessage`` calls
with a request card's worth of blocks, and N ``response_url`` posts. CPU is the calling thread's
(the stand-in answers on its own threads); the median of three runs is printed, with the
connections the stand-in accepted.

    .venv/bin/python bench/slack_calls.py          # 300 calls each
    .venv/bin/python bench/slack_calls.py 1000
"""

from __future__ import annotations

import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slack_sdk import WebClient  # noqa: E402
from slack_sdk.webhook import WebhookClient  # noqa: E402

from bot.adapters.slack.transport import PooledWebClient, PooledWebhookClient  # noqa: E402
from bot.sandbox.certificate import Certificate  # noqa: E402
from bot.sandbox.session import BOT_TOKEN  # noqa: E402
from bot.sandbox.slack_api import SlackApiStandIn  # noqa: E402

BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 300, "verbatim": True}}] * 7
WARM_UP = 20


def per_call(call: Callable[[], object], n: int) -> tuple[float, float]:
    """Milliseconds of CPU and of wall time per call."""
    for _ in range(WARM_UP):
        call()
    cpu, wall = time.thread_time(), time.perf_counter()
    for _ in range(n):
        call()
    return (time.thread_time() - cpu) / n * 1000, (time.perf_counter() - wall) / n * 1000


def measure(slack: SlackApiStandIn, client_ssl: ssl.SSLContext | None, n: int) -> list[tuple[str, float, float, int]]:
    plain = WebClient(token=BOT_TOKEN, base_url=slack.api_url, ssl=client_ssl)
    pooled = PooledWebClient(token=BOT_TOKEN, base_url=slack.api_url, ssl=client_ssl)
    url = slack.response_url("bench")
    rows = []
    cases: list[tuple[str, Callable[[], object]]] = [
        ("chat.postMessage, slack_sdk", lambda: plain.chat_postMessage(channel="C0PLATFORM", text="t", blocks=BLOCKS)),
        ("chat.postMessage, pooled", lambda: pooled.chat_postMessage(channel="C0PLATFORM", text="t", blocks=BLOCKS)),
        ("response_url, slack_sdk", lambda: WebhookClient(url, ssl=client_ssl).send_dict({"text": "t", "blocks": BLOCKS})),
        (
            "response_url, pooled",
            lambda: PooledWebhookClient(url, pool=pooled.pool, ssl=client_ssl).send_dict({"text": "t", "blocks": BLOCKS}),
        ),
    ]
    for name, call in cases:
        before = slack.connections
        runs = [per_call(call, n) for _ in range(3)]
        rows.append(
            (
                name,
                statistics.median(r[0] for r in runs),
                statistics.median(r[1] for r in runs),
                slack.connections - before,
            )
        )
    return rows


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with tempfile.TemporaryDirectory(prefix="slack-calls-") as tmp:
        certificate = Certificate.make(Path(tmp))
        server_tls, client_tls = certificate.server_context(), certificate.client_context()
        print(f"{'':9}{'call, client':32}{'CPU ms':>8}{'wall ms':>9}{'connections':>13}   ({3 * (n + WARM_UP)} calls)")
        for scheme, server_ssl, client_ssl in [("http", None, None), ("https", server_tls, client_tls)]:
            slack = SlackApiStandIn(token=BOT_TOKEN, channels={"C0PLATFORM": "gpu-platform"}, tls=server_ssl).start()
            try:
                for name, cpu, wall, connections in measure(slack, client_ssl, n):
                    print(f"{scheme:9}{name:32}{cpu:8.2f}{wall:9.2f}{connections:13}")
            finally:
                slack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
