"""Thin Slack listeners: parse the payload, call a service, render the answer.

``register(app, services)`` wires them all; each module has its own ``register``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_bolt import App

from handlers import actions, commands, forms

if TYPE_CHECKING:
    from bot.bootstrap import Services
    from bot.executor import TrackingExecutor


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    """Every listener acks in the request thread and hands the rest to ``work`` (``bot.executor``)."""
    commands.register(app, services, work)
    actions.register(app, services, work)
    forms.register(app, services, work)
