"""The user-group cache of ``SlackDirectory`` serves display only; decisions read fresh (real WebClient, stand-in Slack)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.adapters.slack.notifier import SlackDirectory, make_web_client
from bot.domain.policy import parse_policy
from bot.sandbox.slack_api import SlackApiStandIn
from bot.services.access import Access


@pytest.fixture
def slack() -> Iterator[SlackApiStandIn]:
    stand_in = SlackApiStandIn(token="xoxb-test", usergroups={"S1": ["U1"]}).start()
    yield stand_in
    stand_in.stop()


def test_decisions_read_the_group_fresh_display_uses_the_cache(slack: SlackApiStandIn) -> None:
    now = [0.0]
    directory = SlackDirectory(make_web_client("xoxb-test", base_url=slack.api_url), ttl=300, monotonic=lambda: now[0])
    policy = parse_policy({"teams": {"t": {"channel": "C1", "namespaces": ["ns-a"], "approvers": {"usergroups": ["S1"]}}}})
    access, team = Access(policy, directory), policy.teams["t"]
    assert access.may_decide("U1", team) and access.teams_of("U1") == [team]
    slack.usergroups["S1"] = ["U2"]
    now[0] = 1.0
    assert not access.may_decide("U1", team) and access.may_decide("U2", team)  # the very next decision
    assert access.teams_of("U2") == [team]  # a fresh read also refreshes what display shows
    calls = len(slack.calls_of("usergroups.users.list"))
    access.teams_of("U2")
    assert len(slack.calls_of("usergroups.users.list")) == calls  # display within the TTL: no call
