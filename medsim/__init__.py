"""The application shell: the ``medsim`` command, the run spec and run assembly.

It sits above the engine (``agents``: participants, consultation, scorers, backends)
and the world (``game``); neither imports it."""
