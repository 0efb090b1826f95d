"""The evaluation suites beyond the diagnosis consultation, each with its own engine,
events and scorers: OSCE treatment persuasion (``osce*``), AutoMedic's conversion,
protocol and CARE metric (``automedic*``, ``care``, ``negation``), AgentClinic's bias
conditions (``biases``) and case generation (``generate``). The shell (``medsim``) runs
them into the bench's run directory; docs/suites.md describes each."""
