"""Grafana side of agenttrail: dashboards built from code, and provisioning through the HTTP API.

- ``agenttrail.grafana.dashboards``: builds the dashboard JSON (``python -m agenttrail.grafana.dashboards
  --write dashboards/``) from the queries in ``queries/``.
- ``agenttrail.grafana.datasources``: the Prometheus / Tempo / Loki datasources with fixed uids.
- ``agenttrail.grafana.provision``: health check, folder, datasources, dashboards; idempotent.
- ``agenttrail.grafana.cli``: the ``agenttrail grafana`` click group.

This package imports nothing from agenttrail except ``agenttrail.errors`` and
``agenttrail.instrument.names``; importing it has no side effects.
"""
