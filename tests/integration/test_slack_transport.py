"""The bot's Slack clients on kept-alive connections, against the Slack stand-in over HTTP: many calls
share one connection, and rate limits and broken connections are handled as slack_sdk handles them."""

from __future__ import annotations

import base64
import http.client
import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from bot.adapters.slack.languages import Languages
from bot.adapters.slack.notifier import SlackDirectory, SlackNotifier, make_web_client
from bot.domain.languages import Language
from bot.errors import TemporaryError
from bot.logs import configure_logging
from bot.sandbox.session import BOT_TOKEN
from bot.sandbox.slack_api import SlackApiStandIn
from bot.sandbox.world import sandbox_slack
from bot.services.text import say
from tests.integration.conftest import SlackOverHttp
from tests.integration.processes import free_port

ALICE = "U0ALICE"
CHANNEL = "C0PLATFORM"
REQUEST = "request ai-frontier-research +1 for 1d one more epoch"


@pytest.fixture
def stand_in() -> Iterator[SlackApiStandIn]:
    slack = sandbox_slack(BOT_TOKEN).start()
    yield slack
    slack.stop()


def notifier(stand_in: SlackApiStandIn) -> SlackNotifier:
    return SlackNotifier(make_web_client(BOT_TOKEN, base_url=stand_in.api_url), Languages.only(Language.EN))


def posted(stand_in: SlackApiStandIn) -> list[str]:
    return [r.text for r in stand_in.records if r.kind == "message"]


def test_calls_share_one_kept_alive_connection(stand_in: SlackApiStandIn) -> None:
    slack = notifier(stand_in)
    ref = slack.post(CHANNEL, say("first"))
    for number in range(5):
        slack.reply(ref, say(f"reply {number}"))
    slack.tell_user(ALICE, say("hello"))  # conversations.open on the request client, the message on the outbox's
    assert len(stand_in.thread(CHANNEL, ref.ts)) == 5 and posted(stand_in)[-1] == "hello"
    assert stand_in.connections == 1


def test_a_rate_limit_is_waited_out_where_the_client_retries_them(stand_in: SlackApiStandIn) -> None:
    directory = SlackDirectory(make_web_client(BOT_TOKEN, base_url=stand_in.api_url))
    stand_in.fail("usergroups.users.list", "ratelimited", status=429, retry_after=1)
    assert directory.usergroup_members("S0PLATFORM", fresh=True) == {"U0PAT", "U0DANA"}
    assert len(stand_in.calls_of("usergroups.users.list")) == 2


def test_a_rate_limit_reaches_the_outbox_with_its_retry_after(stand_in: SlackApiStandIn) -> None:
    stand_in.fail("chat.postMessage", "ratelimited", status=429, retry_after=30)
    with pytest.raises(TemporaryError) as raised:
        notifier(stand_in).post(CHANNEL, say("later"))
    assert raised.value.delay == 30 and "ratelimited" in str(raised.value)
    assert len(stand_in.calls_of("chat.postMessage")) == 1 and posted(stand_in) == []


def test_a_dropped_connection_is_retried_on_a_new_one(stand_in: SlackApiStandIn) -> None:
    slack = notifier(stand_in)
    slack.post(CHANNEL, say("before"))
    stand_in.drop_next("chat.postMessage")
    slack.post(CHANNEL, say("after the drop"))
    assert posted(stand_in) == ["before", "after the drop"]
    assert len(stand_in.calls_of("chat.postMessage")) == 3 and stand_in.connections == 2


def test_slack_out_of_reach_is_a_temporary_error(stand_in: SlackApiStandIn) -> None:
    slack = notifier(stand_in)
    slack.post(CHANNEL, say("before"))
    stand_in.refuse_connections()
    with pytest.raises(TemporaryError, match="did not answer"):
        slack.post(CHANNEL, say("into the void"))
    stand_in.accept_connections()
    slack.post(CHANNEL, say("back"))
    assert posted(stand_in) == ["before", "back"]


def test_listeners_answer_and_post_on_kept_alive_connections(slack: SlackOverHttp) -> None:
    """Bolt's ``client`` and ``respond`` share the bot's connections: the request card, the answer on
    ``response_url`` and the outbox do not open a connection per call."""
    stand_in = slack.sandbox.slack
    slack.command(ALICE, REQUEST)
    opened, calls = stand_in.connections, len(stand_in.calls)
    for _ in range(5):
        slack.command(ALICE, REQUEST)
    answers = slack.responses()
    assert len(answers) == 6 and all("submitted" in answer for answer in answers)
    assert len(stand_in.calls) - calls >= 5 and len(answers) - 1 == 5  # at least a post and an answer each
    assert stand_in.connections - opened < 5


class _AuthenticatingProxy(BaseHTTPRequestHandler):
    """A forward proxy that wants Basic credentials (Proxy-Authorization), as corporate proxies do."""

    expected = "Basic " + base64.b64encode(b"bot:s3cr%t").decode()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Proxy-Authorization") != self.expected:
            self.send_response(407)
            self.send_header("Proxy-Authenticate", 'Basic realm="proxy"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        target = urlsplit(self.path)  # a proxy is sent the absolute URL
        upstream = http.client.HTTPConnection(target.netloc, timeout=10)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-authorization", "proxy-connection")}
        upstream.request("POST", target.path + (f"?{target.query}" if target.query else ""), body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.getheader("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        pass


def test_a_proxy_that_asks_for_credentials_gets_those_in_its_url(
    stand_in: SlackApiStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTPS_PROXY=http://user:password@host:port`` (percent-encoded) works as it did with urllib."""
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _AuthenticatingProxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTPS_PROXY", f"http://bot:s3cr%25t@127.0.0.1:{proxy.server_address[1]}")
        notifier(stand_in).post(CHANNEL, say("through the proxy"))
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert posted(stand_in) == ["through the proxy"]


def test_hosts_named_in_no_proxy_are_reached_directly(stand_in: SlackApiStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    """As urllib does: ``NO_PROXY`` hosts (an internal Slack gateway, say) skip the proxy; the others use it."""
    closed = free_port()  # a proxy nothing answers at: any call sent to it fails
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed}")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "example.internal,127.0.0.1")
    notifier(stand_in).post(CHANNEL, say("straight to Slack"))
    assert posted(stand_in) == ["straight to Slack"]
    monkeypatch.setenv("NO_PROXY", "example.internal")
    with pytest.raises(TemporaryError):
        notifier(stand_in).post(CHANNEL, say("through the proxy nobody runs"))


class _CountsItsFormatting(dict):  # type: ignore[type-arg]
    """A message part that counts how often it is turned into text (JSON encoding does not do that)."""

    formatted = 0

    def __repr__(self) -> str:
        type(self).formatted += 1
        return super().__repr__()


def test_above_debug_no_call_formats_its_debug_message(stand_in: SlackApiStandIn) -> None:
    """slack_sdk guards its DEBUG lines (whole request and response bodies) with its own loggers'
    ``level``, not the effective one: a logger left NOTSET formats them on every call, for nothing."""
    configure_logging(level="INFO", fmt="text", stream=io.StringIO())
    try:
        client = make_web_client(BOT_TOKEN, base_url=stand_in.api_url)
        block = _CountsItsFormatting(type="section", text={"type": "mrkdwn", "text": "hello"})
        client.chat_postMessage(channel=CHANNEL, text="hello", blocks=[block])
        assert posted(stand_in) == ["hello"]
        assert _CountsItsFormatting.formatted == 0
    finally:
        configure_logging(level="WARNING", fmt="text")
