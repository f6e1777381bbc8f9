"""Thin Slack listeners: parse the payload, call a service, render the answer.

``register(app, services)`` wires them all; each module has its own ``register``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_bolt import App

from handlers import actions, commands, events, forms

if TYPE_CHECKING:
    from bot.services.container import Services


def register(app: App, services: Services) -> None:
    commands.register(app, services)
    actions.register(app, services)
    forms.register(app, services)
    events.register(app, services)  # last: its catch-all answers any event the others did not take
