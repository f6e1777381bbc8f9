"""Slack: Block Kit builders (pure), payload parsing (at the edge), the Web API notifier, the Bolt app."""
