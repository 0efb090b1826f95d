"""What the hospital can do: a catalogue of examinations and tests (written for medsim),
grouped by the room that does them, from the map and the order routing. The test menu a
person orders from, in the game and in the terminal."""
from __future__ import annotations

from dataclasses import dataclass

from game.hospital_map import HospitalMap
from game.orders import OrderRouter

__all__ = ["CATALOGUE", "MenuGroup", "test_menu"]

CATALOGUE: tuple[str, ...] = (
    # at the bedside
    "Vital signs", "General physical examination", "Cardiovascular examination", "Respiratory examination",
    "Abdominal examination", "Neurological examination", "Skin examination", "Musculoskeletal examination",
    "Eye examination", "Ear, nose and throat examination", "Pelvic examination", "Rectal examination",
    # the lab
    "Complete blood count", "Basic metabolic panel", "Liver function tests", "Renal function tests",
    "Coagulation studies", "C-reactive protein", "Erythrocyte sedimentation rate", "Troponin", "D-dimer",
    "Arterial blood gas", "Blood glucose", "HbA1c", "Thyroid function tests", "Lipase", "Lipid panel",
    "Serum electrolytes", "Creatine kinase", "Iron studies", "Vitamin B12 and folate", "Blood cultures",
    "Urinalysis", "Urine culture", "Pregnancy test", "Lumbar puncture", "Stool culture", "Throat swab",
    # the ECG room
    "12-lead ECG", "Holter monitor",
    # imaging
    "Chest X-ray", "Abdominal X-ray", "Limb X-ray", "Spine X-ray",
    "CT head", "CT chest", "CT abdomen and pelvis", "CT pulmonary angiogram", "MRI brain", "MRI spine",
    "Abdominal ultrasound", "Pelvic ultrasound", "Doppler ultrasound", "Echocardiogram",
)


@dataclass(frozen=True)
class MenuGroup:
    room: str  # the room's name on the map, or "bedside"
    label: str  # what a person reads
    tests: tuple[str, ...]


def test_menu(hmap: HospitalMap, router: OrderRouter = OrderRouter(),
              catalogue: tuple[str, ...] = CATALOGUE) -> list[MenuGroup]:
    """The catalogue grouped by where each test is done: the bedside first, then rooms
    in the order the map lists their stations. A station the map lacks is an error of
    the map (``HospitalMap.point`` names it)."""
    groups: dict[str, list[str]] = {}
    for test in catalogue:
        route = router.route(test)
        room = "bedside" if route.bedside else (hmap.point(route.station).room or route.station)
        groups.setdefault(room, []).append(test)
    order = ["bedside"] + [r for r in groups if r != "bedside"]
    out = []
    for room in order:
        if room in groups:
            label = "At the bedside" if room == "bedside" else room.replace("_", " ").replace("imaging ", "imaging: ").title()
            out.append(MenuGroup(room, label.replace("Ecg", "ECG").replace("Ct Mri", "CT/MRI").replace("Xray", "X-ray"),
                                 tuple(groups[room])))
    return out
