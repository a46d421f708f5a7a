"""Framework integrations (optional extras); import the submodule you need.

- :mod:`agenttrail.integrations.langgraph` — ``pip install 'agenttrail[langgraph]'``
- :mod:`agenttrail.integrations.openai_agents` — ``pip install 'agenttrail[openai-agents]'``

Importing this package imports no framework.
"""
