"""mem0's endpoints, by area: memories, entities (users/agents/runs), and the rest."""
