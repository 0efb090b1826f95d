"""Simulator fidelity: how faithful the simulated patient and technician were, measured in
every consultation run (issue 21).

- :mod:`agents.fidelity.facts`: a case's facts as the check reads them;
- :mod:`agents.fidelity.patient` and :mod:`agents.fidelity.technician`: the
  deterministic pre-check of one patient utterance and one technician reply;
- :mod:`agents.fidelity.checker`: the checker model's bounded JSON verdict on what the
  pre-check leaves undecided;
- :mod:`agents.fidelity.scorer`: the ``fidelity`` scorer over a finished log, its row
  block, the run's rates with Wilson intervals and report.md's section;
- :mod:`agents.fidelity.pairs`: the labelled set that tells whether the checker can be
  trusted (``medsim fidelity --pairs``).
"""
