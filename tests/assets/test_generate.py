"""assets/generate.py reproduces the committed art byte for byte, and leaves the map
(maps/hospital.tmx, edited in Tiled) alone unless asked."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from game.appearance import PATIENT_SHEETS
from game.hospital_map import load_map

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "assets" / "generate.py"


def _generate(out: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")
    return subprocess.run([sys.executable, str(GENERATOR), "--out", str(out), *args],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    r = _generate(out)
    assert r.returncode == 0, r.stderr
    return out


def _committed_art() -> list[str]:
    files = ["assets/tiles/hospital_tiles.png", "maps/hospital.tsx", "assets/README.md"]
    files += sorted(str(p.relative_to(REPO)) for p in (REPO / "assets" / "sprites").glob("*.png"))
    return files


@pytest.mark.parametrize("rel", _committed_art())
def test_the_generator_reproduces_the_committed_file(generated, rel):
    assert (generated / rel).read_bytes() == (REPO / rel).read_bytes(), \
        f"{rel} differs from what assets/generate.py draws: run `make assets` (and commit the result)"


def test_it_draws_exactly_the_committed_sheets(generated):
    made = sorted(p.name for p in (generated / "assets" / "sprites").glob("*.png"))
    committed = sorted(p.name for p in (REPO / "assets" / "sprites").glob("*.png"))
    assert made == committed


def test_it_writes_no_map_unless_asked(generated):
    assert not (generated / "maps" / "hospital.tmx").exists()
    assert sorted(p.name for p in (generated / "maps").iterdir()) == ["hospital.tsx"]


def test_the_patient_sheets_are_the_ones_the_world_chooses_from():
    spec = importlib.util.spec_from_file_location("medsim_asset_generator", GENERATOR)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert sorted(n for n in gen.CHARACTERS if n.startswith("patient_")) == sorted(PATIENT_SHEETS)
    assert set(gen.CHARACTER_NOTES) == set(gen.CHARACTERS)


def test_write_map_refuses_to_replace_a_map_without_force(tmp_path):
    tmx = tmp_path / "maps" / "hospital.tmx"
    tmx.parent.mkdir(parents=True)
    tmx.write_text("<map>edited in Tiled</map>\n", encoding="utf-8")
    r = _generate(tmp_path, "--write-map")
    assert r.returncode != 0
    assert "--force" in r.stderr and "Tiled" in r.stderr
    assert tmx.read_text(encoding="utf-8") == "<map>edited in Tiled</map>\n"
    assert not (tmp_path / "assets").exists()        # it stopped before writing anything
    r = _generate(tmp_path, "--force")
    assert r.returncode != 0 and "--write-map" in r.stderr


def test_write_map_writes_a_loadable_map(tmp_path):
    r = _generate(tmp_path, "--write-map")
    assert r.returncode == 0, r.stderr
    hm = load_map(tmp_path / "maps" / "hospital.tmx")     # validates rooms, points, reachability
    assert hm.point("entrance_spawn")
    tmx = tmp_path / "maps" / "hospital.tmx"
    tmx.write_text(tmx.read_text(encoding="utf-8").replace("medsim hospital", "edited"), encoding="utf-8")
    r = _generate(tmp_path, "--write-map", "--force")
    assert r.returncode == 0, r.stderr
    assert "medsim hospital" in tmx.read_text(encoding="utf-8")


def test_it_refuses_to_renumber_the_tiles_the_map_uses(tmp_path):
    tsx = tmp_path / "maps" / "hospital.tsx"
    tsx.parent.mkdir(parents=True)
    committed = (REPO / "maps" / "hospital.tsx").read_text(encoding="utf-8")
    tsx.write_text(committed.replace('value="floor_corridor"', 'value="floor_old"'), encoding="utf-8")
    r = _generate(tmp_path)
    assert r.returncode != 0
    assert "id 0: floor_old -> floor_corridor" in r.stderr and "Append new tiles" in r.stderr


def test_write_map_declares_the_committed_maps_test_rooms(tmp_path):
    """The test rooms (station properties) and the bedside rule (map properties) that
    --write-map writes are the committed map's: the generator and the map agree."""
    r = _generate(tmp_path, "--write-map")
    assert r.returncode == 0, r.stderr

    def declared(path):
        return sorted((s.name, s.label, s.keywords, s.priority, s.default, s.machine, s.room, s.bedside)
                      for s in load_map(path).test_stations)
    written = declared(tmp_path / "maps" / "hospital.tmx")
    assert written == declared(REPO / "maps" / "hospital.tmx")
    assert {s[0] for s in written} == {"bedside", "lab_station", "ecg_station", "xray_station", "ct_station"}
