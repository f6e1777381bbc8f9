"""The yardstick of ``bench/ack_latency.py``: a Bolt app that only acks, served like the bot.

The same WSGI glue (``bot.adapters.slack.http.WebApp``) behind waitress with 8 threads, Bolt's
default listener runner; every slash command and every button is acknowledged and nothing else.

    .venv/bin/python bench/bare_bolt.py PORT SIGNING_SECRET SLACK_API_URL BOT_TOKEN

(Bolt calls ``auth.test`` once, on the first request, so the Slack API URL must answer.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import waitress  # noqa: E402
from slack_bolt import Ack, App  # noqa: E402
from slack_sdk import WebClient  # noqa: E402

from bot.adapters.slack.http import WebApp  # noqa: E402


def main(port: int, signing_secret: str, api_url: str, token: str) -> None:
    app = App(client=WebClient(token=token, base_url=api_url), signing_secret=signing_secret, token_verification_enabled=False)

    def only_ack(ack: Ack) -> None:
        ack()

    app.command(re.compile(".*"))(only_ack)
    app.action(re.compile(".*"))(only_ack)
    app.view(re.compile(".*"))(only_ack)
    waitress.serve(WebApp(app), host="127.0.0.1", port=port, threads=8, _quiet=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
