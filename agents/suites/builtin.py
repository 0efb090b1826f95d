"""The suites medsim ships, registered in one place (as inspect_ai lists its model
providers in one file): the diagnostic consultation, AutoMedic and OSCE. The shell
imports this module; a suite of your own registers itself the same way."""
from __future__ import annotations

from agents.suites.diagnosis import AutomedicSuite, DiagnosisSuite
from agents.suites.osce_suite import OsceSuite
from agents.suites.registry import register_suite, suite_names

__all__ = ["BUILTIN_SUITES"]

BUILTIN_SUITES = (DiagnosisSuite(), AutomedicSuite(), OsceSuite())
for _suite in BUILTIN_SUITES:
    if _suite.name not in suite_names():
        register_suite(_suite)
