"""Thin Slack listeners: parse the payload, call a service, render the answer.

``register(app, services)`` wires them all; each module has its own ``register``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_bolt import App

from handlers import actions, commands, events, forms, why_form

if TYPE_CHECKING:
    from bot.executor import TrackingExecutor
    from bot.services.container import Services


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    """Every listener decides its ack in the request thread and hands the rest to ``work`` (``bot.executor``)."""
    commands.register(app, services, work)
    actions.register(app, services, work)
    forms.register(app, services, work)
    why_form.register(app, services, work)
    events.register(app, services, work)  # last: its catch-all answers any event the others did not take
