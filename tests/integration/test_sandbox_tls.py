"""The sandbox over HTTPS (``Sandbox(tls=...)``): a request goes through with the bot's Slack and
Kubernetes clients trusting the throwaway certificate, and clients that do not trust it are refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from kubernetes import client, config
from slack_sdk.errors import SlackClientError

from bot.adapters.slack.notifier import make_web_client
from bot.clock import ManualClock
from bot.sandbox.certificate import Certificate
from bot.sandbox.session import BOT_TOKEN, Sandbox


@pytest.fixture
def box(tmp_path: Path, clock: ManualClock) -> Iterator[Sandbox]:
    sandbox = Sandbox(clock=clock, tls=Certificate.make(tmp_path)).start()
    yield sandbox
    sandbox.stop()


def test_a_request_goes_through_both_stand_ins_over_https(box: Sandbox) -> None:
    assert box.slack.api_url.startswith("https://") and box.kube is not None and box.kube.url.startswith("https://")
    assert box.side is not None
    box.send(box.side.slash_command(user_id="U0ALICE", text="request ai-frontier-research +1 for 1d over tls"))
    answers = [r.text for r in box.slack.records if r.kind == "response"]
    assert answers and "submitted" in answers[-1]
    assert [r for r in box.slack.records if r.kind == "message" and r.channel == "C0FRONTIER"]
    assert any(path.endswith("/resourcequotas/compute-quota") for _, path, _, _ in box.kube.log)


def test_a_slack_client_without_the_certificate_is_refused(box: Sandbox) -> None:
    system_trust = make_web_client(BOT_TOKEN, base_url=box.slack.api_url)
    with pytest.raises((SlackClientError, OSError)) as raised:
        system_trust.auth_test()
    assert "CERTIFICATE_VERIFY_FAILED" in repr(raised.value)
    assert box.slack.calls_of("auth.test") == []


def test_a_kubernetes_client_without_the_certificate_is_refused(box: Sandbox, tmp_path: Path) -> None:
    assert box.kube is not None
    kubeconfig = box.kube.write_kubeconfig(tmp_path / "no-ca-kubeconfig")
    api = client.CoreV1Api(config.new_client_from_config(str(kubeconfig)))
    served = len(box.kube.log)
    with pytest.raises(urllib3.exceptions.MaxRetryError) as raised:
        api.list_node(_request_timeout=5)
    assert "CERTIFICATE_VERIFY_FAILED" in repr(raised.value)
    assert len(box.kube.log) == served
