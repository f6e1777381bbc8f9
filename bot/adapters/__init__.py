"""Adapters: the database, Kubernetes, Slack and Prometheus behind the small interfaces of ``bot.services.ports``."""
