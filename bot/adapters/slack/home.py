"""The App Home tab as Block Kit (a ``home`` view of plain dicts, like every message in ``blocks``),
and the publisher that sends it with ``views.publish``. Its words are whole catalog sentences in the
current language (the person's: the caller sets it)."""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient

from bot.adapters import i18n
from bot.adapters.i18n import format_money, format_share, tr
from bot.adapters.slack import ids
from bot.adapters.slack.blocks import (
    MAX_BLOCKS,
    Block,
    actions,
    button,
    context,
    divider,
    header,
    lines_to_blocks,
    pending_line,
    status_lines,
)
from bot.adapters.slack.languages import Languages
from bot.adapters.slack.lists import listed
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.notifier import slack_call
from bot.adapters.slack.sentences import fill, fill_n
from bot.domain.commands import format_request_id
from bot.services.ports import ActionKind
from bot.services.views import HomeView, TeamSpendLine

# Each request waiting for a decision takes two blocks (its line and its buttons); keep room for the rest.
MAX_DECISIONS_SHOWN = 10
NOTICE_LIMIT = 2000


def home_view(home: HomeView) -> dict[str, Any]:
    blocks: list[Block] = [header(tr("GPU quota"))]
    if home.notice:
        blocks.append(context(home.notice[:NOTICE_LIMIT], verbatim=False))
    blocks.extend(_to_decide(home))
    blocks.append(header(tr("Your requests")))
    nothing = render(fill("Nothing pending. `/gpu-quota request` asks for GPUs."))
    blocks.extend(lines_to_blocks([pending_line(p) for p in home.mine] or [nothing]))
    blocks.append(header(tr("Your teams' quotas")))
    quota_lines = status_lines(home.quotas) or [render(fill("You are not in any team of the policy."))]
    spend_lines = [_spend_line(s, home.currency) for s in home.spend if s.budget > 0]
    room = MAX_BLOCKS - len(blocks) - (2 if spend_lines else 0)
    blocks.extend(lines_to_blocks(quota_lines, max_blocks=max(room, 1)))
    if spend_lines:
        blocks.append(header(tr("Month to date")))
        blocks.extend(lines_to_blocks(spend_lines, max_blocks=1))
    return {"type": "home", "blocks": blocks[:MAX_BLOCKS]}


def _spend_line(spend: TeamSpendLine, currency: str) -> str:
    """``*Frontier research*: 1,200.00 USD of 5,000.00 USD this month (24%)``."""
    return render(
        fill(
            "*{team}*: {spent} of {budget} this month ({share})",
            team=spend.team_label,
            spent=format_money(spend.spent, currency),
            budget=format_money(spend.budget, currency),
            share=format_share(spend.spent / spend.budget),
        )
    )


def _to_decide(home: HomeView) -> list[Block]:
    if not home.to_decide:
        return []
    blocks: list[Block] = [header(tr("Waiting for your decision"))]
    for pending in home.to_decide[:MAX_DECISIONS_SHOWN]:
        blocks.extend(lines_to_blocks([pending_line(pending)], max_blocks=1))
        request_id = str(pending.request_id)
        blocks.append(
            actions(
                [
                    button(tr("Approve"), ids.ACTION_IDS[ActionKind.APPROVE], request_id, "primary"),
                    button(tr("Deny"), ids.ACTION_IDS[ActionKind.DENY], request_id),
                ],
                block_id=f"home-decide:{pending.request_id}",
            )
        )
    hidden = len(home.to_decide) - MAX_DECISIONS_SHOWN
    if hidden > 0:
        more = listed(format_request_id(p.request_id) for p in home.to_decide[MAX_DECISIONS_SHOWN:])
        text = render(fill_n("… and {count} more: {requests}", "… and {count} more: {requests}", hidden, requests=more))
        blocks.append(context(text[:NOTICE_LIMIT], verbatim=False))
    blocks.append(divider())
    return blocks


class SlackHomeTabs:
    """``HomePublisher`` over the Web API, in the person's language."""

    def __init__(self, client: WebClient, languages: Languages) -> None:
        self._client = client
        self._languages = languages

    def publish_home(self, view: HomeView) -> None:
        with i18n.speaking(self._languages.of_person(view.user_id)):
            rendered = home_view(view)
        slack_call("publish the App Home", lambda: self._client.views_publish(user_id=view.user_id, view=rendered))
