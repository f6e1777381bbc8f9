"""How fast each Socket Mode client is back after Slack's side drops the connection, and at what CPU cost.

    .venv/bin/python bench/socket_mode_drops.py [--adapters builtin,websocket_client,aiohttp,bot] [--drops fin,rst,silent,refresh]

For every adapter and drop kind, a fresh process connects to the loopback Socket Mode stand-in
(``bot/sandbox/socket_mode.py``, reached through ``apps.connections.open`` on the Slack Web API
stand-in), has one envelope acked, then the stand-in drops the connection (``fin``: TCP FIN
without a close frame; ``rst``: reset; ``silent``: open but nothing comes back; ``refresh``: a
``disconnect`` envelope). Printed: seconds until an envelope sent on the new connection is acked
("back"), and the process's CPU seconds from the drop until then. A client not back within the
limit prints ">LIMIT". ``bot`` is the client ``gpu-quota-bot run`` uses (bot/adapters/slack/socket_mode.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))

from bot.sandbox.slack_api import SlackApiStandIn  # noqa: E402
from bot.sandbox.socket_mode import SocketModeStandIn, wait_until  # noqa: E402

APP_TOKEN = "xapp-1-bench"
BOT_TOKEN = "xoxb-bench"
ADAPTERS = ["builtin", "websocket_client", "aiohttp", "bot"]
DROPS = ["fin", "rst", "silent", "refresh"]
LIMIT = 75.0
SETTLE_SECONDS = 3.0  # the connection is a few seconds old when it drops (in production: hours)


def start_builtin(api_url: str) -> None:
    from slack_sdk import WebClient
    from slack_sdk.socket_mode.builtin import SocketModeClient
    from slack_sdk.socket_mode.response import SocketModeResponse

    client = SocketModeClient(APP_TOKEN, web_client=WebClient(base_url=api_url))
    client.socket_mode_request_listeners.append(
        lambda c, req: c.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
    )
    client.connect()


def start_websocket_client(api_url: str) -> None:
    from slack_sdk import WebClient
    from slack_sdk.socket_mode.response import SocketModeResponse
    from slack_sdk.socket_mode.websocket_client import SocketModeClient

    client = SocketModeClient(APP_TOKEN, web_client=WebClient(base_url=api_url))
    client.socket_mode_request_listeners.append(
        lambda c, req: c.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
    )
    client.connect()


def start_aiohttp(api_url: str) -> None:
    from slack_sdk.socket_mode.aiohttp import SocketModeClient
    from slack_sdk.socket_mode.response import SocketModeResponse
    from slack_sdk.web.async_client import AsyncWebClient

    async def main() -> None:
        client = SocketModeClient(APP_TOKEN, web_client=AsyncWebClient(base_url=api_url))

        async def ack(c: Any, req: Any) -> None:
            await c.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))

        client.socket_mode_request_listeners.append(ack)
        await client.connect()
        await asyncio.Event().wait()

    threading.Thread(target=asyncio.run, args=[main()], daemon=True).start()


def start_bot(api_url: str) -> None:
    from slack_sdk import WebClient

    from bot.adapters.slack.socket_mode import SocketModeConnection

    def ack(envelope: dict[str, Any]) -> dict[str, Any] | None:
        return None  # an empty ack

    SocketModeConnection(APP_TOKEN, web_client=WebClient(base_url=api_url), handle=ack).start()


STARTERS = {
    "builtin": start_builtin,
    "websocket_client": start_websocket_client,
    "aiohttp": start_aiohttp,
    "bot": start_bot,
}


def one(adapter: str, drop: str) -> dict[str, Any]:
    """One adapter, one drop, in this process."""
    socket_mode = SocketModeStandIn().start()
    slack = SlackApiStandIn(token=BOT_TOKEN).start()
    slack.socket_mode = socket_mode
    STARTERS[adapter](slack.api_url)
    if not (socket_mode.wait_for_connections(1, timeout=20) and _acked(socket_mode, 10)):
        return {"adapter": adapter, "drop": drop, "error": "never connected"}
    time.sleep(SETTLE_SECONDS)
    opened = socket_mode.opened
    cpu, start = time.process_time(), time.monotonic()
    socket_mode.drop(drop)  # type: ignore[arg-type]
    back = wait_until(lambda: socket_mode.opened > opened and _acked(socket_mode, 0.5), LIMIT)
    return {
        "adapter": adapter,
        "drop": drop,
        "back_seconds": round(time.monotonic() - start, 2) if back else None,
        "cpu_seconds": round(time.process_time() - cpu, 2),
    }


def _acked(socket_mode: SocketModeStandIn, timeout: float) -> bool:
    envelope_id = socket_mode.deliver("slash_commands", {"command": "/gpu-quota", "text": "help"})
    return envelope_id is not None and socket_mode.wait_for_ack(envelope_id, timeout=timeout) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    parser.add_argument("--drops", default=",".join(DROPS))
    parser.add_argument("--repeat", type=int, default=1, help="runs per adapter and drop (each in a fresh process)")
    parser.add_argument("--one", nargs=2, metavar=("ADAPTER", "DROP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)), flush=True)
        return
    print(f"{'adapter':<18} {'drop':<8} {'back after (s)':>24} {'CPU seconds':>24}")
    for adapter in args.adapters.split(","):
        for drop in args.drops.split(","):
            results = [_in_a_process(adapter, drop) for _ in range(args.repeat)]
            back = " / ".join(_back(r) for r in results)
            cpu = " / ".join(f"{r['cpu_seconds']:.2f}" if "cpu_seconds" in r else str(r.get("error", "?")) for r in results)
            print(f"{adapter:<18} {drop:<8} {back:>24} {cpu:>24}", flush=True)


def _back(result: dict[str, Any]) -> str:
    if "cpu_seconds" not in result:
        return "-"
    return f"{result['back_seconds']:.1f}" if result.get("back_seconds") is not None else f">{LIMIT:.0f}"


def _in_a_process(adapter: str, drop: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--one", adapter, drop]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=LIMIT + 60)
    except subprocess.TimeoutExpired:
        return {"error": "hung"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:60]}


if __name__ == "__main__":
    main()
