"""Use cases: submit, decide, apply, expire, report. They orchestrate the ports and own no I/O details."""
