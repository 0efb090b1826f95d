"""medsim agents: the engine. LLM backends (``agents.llm``), roles and prompts, the
consultation protocol and engine, participants (``agents.participants``), diagnosis
strategies, the judge and scorers, case sets, the evaluation suites (``agents.suites``),
events and result rows.

The benchmark's run loop, the run spec and the ``medsim`` command live in ``medsim``, above
this package. Nothing here imports ``game``, ``medsim`` or pygame, or does work at import
time."""
