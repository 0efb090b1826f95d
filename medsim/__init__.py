"""The application shell: the ``medsim`` command, the run spec, run assembly, the bench's
run loop and its executors (threads, Ray), play and replay, re-scoring, run comparison,
and the reports (``report.md``, ``report.html``, ``medsim view``).

It sits above the engine (``agents``: participants, consultation, scorers, backends)
and the world (``game``); neither imports it."""
