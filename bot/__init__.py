"""gpu-quota-bot: ChatOps for GPU quota on shared Kubernetes clusters."""
