"""Where an ordered test is done: blood work -> lab, ECG -> ECG room, X-ray -> X-ray,
CT/MRI/ultrasound -> CT/MRI; physical examination at the bedside. Configurable; unknown
test names go to the lab."""
from __future__ import annotations

from dataclasses import dataclass

from agents.findings import tokens

__all__ = ["OrderRoute", "OrderRouter", "DEFAULT_RULES"]

# (words any of which may appear in the request, station point name, bedside?)
DEFAULT_RULES: tuple[tuple[tuple[str, ...], str, bool], ...] = (
    (("ecg", "electrocardiogram", "ekg", "holter"), "ecg_station", False),
    (("ray", "xray", "radiograph", "film"), "xray_station", False),
    (("ct", "mri", "tomography", "angiogram", "angiography", "scan", "ultrasound", "doppler",
      "echocardiogram", "echo", "transvaginal", "imaging", "mra", "pet"), "ct_station", False),
    (("vital", "signs", "auscultation", "palpation", "inspection", "percussion", "physical",
      "neurological", "reflexes", "examination", "exam", "pressure", "temperature",
      "pulse", "heart", "lung", "abdominal", "skin", "eye", "fundoscopy", "otoscopy"), "bedside", True),
)


@dataclass(frozen=True)
class OrderRoute:
    station: str  # point name of where it is done, or "bedside"
    bedside: bool
    rule: str


@dataclass(frozen=True)
class OrderRouter:
    rules: tuple[tuple[tuple[str, ...], str, bool], ...] = DEFAULT_RULES
    default_station: str = "lab_station"

    def route(self, test_name: str) -> OrderRoute:
        words = set(tokens(test_name)) | set(test_name.lower().replace("-", " ").replace("_", " ").split())
        for keys, station, bedside in self.rules:
            hit = sorted(words & set(keys))
            if hit:
                return OrderRoute(station, bedside, f"keyword '{hit[0]}'")
        return OrderRoute(self.default_station, False, "default (unknown test name -> lab)")
