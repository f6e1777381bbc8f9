"""The request form's resource choice, submitted as Slack does (a signed view_submission into the real app):
an empty choice is refused under the field and nothing is requested; a chosen one is submitted."""

from __future__ import annotations

from typing import Any

from bot.adapters.slack import ids, modals
from bot.domain.commands import GpuAmount, RequestDraft
from bot.services.views import ResourceChoice
from tests.integration.conftest import SlackOverHttp

ALICE = "U0ALICE"
FRONTIER = "ai-frontier-research"


def stored_requests(slack: SlackOverHttp) -> list[Any]:
    database = slack.sandbox.database
    assert database is not None
    return database.run(lambda repo: [repo.request(i) for i in range(1, 5) if repo.request(i) is not None])


def test_the_resource_choice_is_required_and_a_chosen_one_is_submitted(slack: SlackOverHttp) -> None:
    choices = (ResourceChoice("nvidia.com/gpu", 4, 3), ResourceChoice("nvidia.com/mig-3g.40gb", 2, 0))
    draft = RequestDraft(namespace=FRONTIER, amount=GpuAmount(1, True))
    form = modals.request_form(draft, [FRONTIER], channel_id="C0GENERAL", resources=choices).to_dict()
    values = {
        ids.NAMESPACE_BLOCK: FRONTIER,
        ids.GPUS_BLOCK: "+1",
        ids.TERM_BLOCK: ids.TEMPORARY,
        ids.DURATION_BLOCK: "1d",
        ids.REASON_BLOCK: "eval sweep",
    }

    answer = slack.submit(ALICE, form, values).json()  # nothing chosen
    assert answer == {"response_action": "errors", "errors": {ids.RESOURCE_BLOCK: "Choose a resource."}}
    assert stored_requests(slack) == []

    answer = slack.submit(ALICE, form, values | {ids.RESOURCE_BLOCK: "nvidia.com/gpu"}).json()
    assert answer["response_action"] == "update"
    (request,) = stored_requests(slack)
    assert (request.namespace, request.delta, request.reason) == (FRONTIER, 1, "eval sweep")
