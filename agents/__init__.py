"""medsim agents: LLM backends, roles, prompts, the consultation protocol, case sets,
scoring and the benchmark runner. Nothing here imports pygame or does work at import time."""
