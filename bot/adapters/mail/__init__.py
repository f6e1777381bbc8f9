"""Mail: ``SMTP_URL`` (``url``), the bot's mail worded (``words``) and built (``message``), and sent (``smtp``)."""
