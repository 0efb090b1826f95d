"""Measures that see more than right or wrong, each a scorer over the event log
(re-run by ``medsim score``) with its row block, its summary over rows and its report
lines:

- :mod:`agents.measures.differential`: top-1/3/5 of the ranked differential by the judge,
  the Brier score and expected calibration error of the top-1 confidence, the reliability
  bins of the report's diagram;
- :mod:`agents.measures.elicited`: which of the case's facts reached the doctor, recall
  per category and overall;
- :mod:`agents.measures.ordered`: the tests ordered against the case's recorded tests
  (precision, recall, F1, matched by :mod:`agents.orders`), and the cost;
- :mod:`agents.measures.speech`: how the patient spoke (a row block read from the log, no
  scorer): the Flesch-Kincaid grade, facts volunteered unasked, utterances that claim
  nothing, word-list markers; the patient behaviours' manipulation checks read it;
- :mod:`agents.measures.gap`: the share of the gap to a full-information run a condition
  closes (``medsim compare``, a run's own conditions).
"""
