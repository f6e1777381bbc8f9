"""The sandbox: loopback stand-ins for the Slack Web API and the Kubernetes API, and seed data.

They let ``gpu-quota-bot shell`` run the real app, listeners, services and adapters with no Slack
workspace and no cluster, and they are what the integration tests talk to over real HTTP.
"""
