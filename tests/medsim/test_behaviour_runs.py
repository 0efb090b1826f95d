"""Patient behaviours through the shell: the flags and the run spec, a bench grid's rows,
results.csv, report.md and report.html's behaviour table, and level 0 byte for byte."""
from __future__ import annotations

import csv
import json

import pytest

from agents.behaviour_checks import behaviour_table
from agents.results import read_results
from agents.stats import mcnemar_exact, paired_difference_interval, wilson_interval
from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import SpecError, build_spec
from tests.helpers import log_bytes


def _bench(tmp_path, out, argv):
    assert main(["bench", "--cases", "demo", "--llm", "scripted", "--out", str(tmp_path / out), "--no-progress",
                 *argv]) == 0
    return tmp_path / out


def test_a_behaviour_grid_runs_and_its_report_shows_the_table(tmp_path):
    out = _bench(tmp_path, "grid", ["--limit", "6", "--behaviour-grid", "withhold=2,fabricate=2,proficiency=3"])
    rows = read_results(out / "results.jsonl")
    by = {r["condition"] for r in rows}
    assert by == {"cooperative", "withhold-2", "fabricate-2", "proficiency-3"}
    for r in rows:
        if r["condition"] == "cooperative":
            assert "patient_behaviour" not in r
        else:
            name, level = r["condition"].split("-")
            assert r["patient_behaviour"] == f"{name}={level}" and r[f"behaviour_{name}"] == int(level)
        assert r["speech"]["utterances"] > 0 and r["speech"]["fk_grade"] is not None
    with (out / "results.csv").open() as fh:
        header = next(csv.reader(fh))
    assert {"patient_behaviour", "behaviour_withhold", "speech_fk_grade", "speech_volunteering"} <= set(header)
    run = json.loads((out / "run.json").read_text())
    assert run["spec"]["conditions"]["withhold-2"]["protocol"]["patient_behaviour"] == {"withhold": 2}
    assert "patient_behaviour" not in run["spec"]["conditions"]["cooperative"]["protocol"]
    md = (out / "report.md").read_text()
    section = md[md.index("## Patient behaviours"):]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")][1:]  # under the header
    assert [ln.split(" | ")[0].strip("| ") for ln in lines] == ["withhold", "withhold", "fabricate", "fabricate",
                                                                "proficiency", "proficiency"]
    assert [ln.split(" | ")[1] for ln in lines] == ["0", "2", "0", "2", "0", "3"]
    moved = [ln.split(" | ")[7] for ln in lines if ln.split(" | ")[1] != "0"]
    assert moved == ["yes", "yes", "yes"], section  # each check moved the expected way, paired against level 0
    assert "judged by scripted" in section and "fidelity checker is pre-check" in section
    summary = json.loads((out / "summary.json").read_text())["behaviours"]
    assert summary["reference"] == "cooperative" and [x["moved"] for x in summary["lines"] if x["level"]] == moved
    html = (out / "report.html").read_text()
    assert 'id="behaviours"' in html and html.count('<tr class="behaviour') == 6
    assert "Flesch-Kincaid" in html and "McNemar" in html


def test_level_zero_leaves_every_log_byte_for_byte(tmp_path):
    plain = _bench(tmp_path, "plain", ["--limit", "5"])
    zero = _bench(tmp_path, "zero", ["--limit", "5", "--patient-behaviour", "withhold=0,fabricate=0,recall=0"])
    grid = _bench(tmp_path, "grid", ["--limit", "5", "--behaviour-grid", "recall=2"])
    names = sorted(p.name for p in (plain / "events").iterdir())
    assert len(names) == 5 and names == sorted(p.name for p in (zero / "events").iterdir())
    for n in names:
        assert log_bytes(plain / "events" / n) == log_bytes(zero / "events" / n), n
    # the grid's level-0 cells: every event after the header (which holds the grid) is the plain run's
    coop = {r["case_id"]: r["events"] for r in read_results(grid / "results.jsonl") if r["condition"] == "cooperative"}
    for r in read_results(plain / "results.jsonl"):
        body = (plain / r["events"]).read_bytes().split(b"\n", 1)[1]
        assert (grid / coop[r["case_id"]]).read_bytes().split(b"\n", 1)[1] == body, r["case_id"]
    def same(rows):  # the rows but what the clock measured
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    assert same(read_results(plain / "results.jsonl")) == same(read_results(zero / "results.jsonl"))


def test_the_run_spec_takes_a_profile_and_a_grid(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('[protocol]\npatient_behaviour = { recall = 2 }\n'
                    '[conditions.coop]\nprotocol = { patient_behaviour = "none" }\n'
                    '[conditions.both]\nprotocol = { patient_behaviour = { withhold = 1 } }\n')
    spec = build_spec(toml)
    assert spec.protocol.patient_behaviour == (("recall", 2),)
    assert spec.for_condition("coop").protocol.patient_behaviour is None  # text replaces the run's profile
    assert spec.for_condition("both").protocol.patient_behaviour == (("withhold", 1), ("recall", 2))  # a table adds
    assert "patient_behaviour" not in build_spec(None, {}).to_dict()["protocol"]  # a run without keeps its identity
    assert build_spec(None, {"protocol.patient_behaviour": "withhold=0"}).identity() == build_spec(None, {}).identity()
    with pytest.raises(SpecError, match=r"protocol.patient_behaviour: unknown behaviour 'withold' \(did you mean"):
        build_spec(None, {"protocol.patient_behaviour": {"withold": 1}})


@pytest.mark.parametrize("argv,said", [
    (["--patient-behaviour", "witheld=2"], "unknown behaviour 'witheld' (did you mean 'withhold'?"),
    (["--patient-behaviour", "withhold=7"], "level 7 is outside 0-3"),
    (["--patient-behaviour", "withhold"], "'withhold' is not NAME=LEVEL"),
    (["--behaviour-grid", "fabricat"], "--behaviour-grid: unknown behaviour 'fabricat' (did you mean 'fabricate'?"),
    (["--behaviour-grid", "withhold", "--ladder"], "and so does --ladder"),
    (["--behaviour-grid", "withhold", "--patient-behaviour", "recall=1"], "and so does --patient-behaviour"),
    (["--behaviour-grid", "withhold", "--doctor-bias", "recency,race"], "and so does --doctor-bias/--patient-bias"),
    (["--doctor-bias", "recency,race", "--ladder"], "and so does --ladder"),
])
def test_bad_behaviour_flags_are_refused_naming_the_flag(argv, said, capsys):
    assert main(["config", "--show", *argv]) != 0
    err = capsys.readouterr().err
    assert said in err and ("--patient-behaviour" in err or "--behaviour-grid" in err or "--ladder" in err)


def test_the_table_is_the_shared_statistics_on_handmade_rows():
    def row(case, cond, correct, invented, behaviour=None):
        r = {"case_id": case, "seed": 0, "condition": cond, "status": "diagnosed", "correct": correct,
             "fidelity": {"checker": "pre-check", "patient": {"n": 4, "labelled": {"invented": invented},
                                                               "undecided": {"invented": 0}}}}
        return {**r, "patient_behaviour": behaviour} if behaviour else r
    right0 = [True, True, True, False, False, True, True, False]
    right1 = [True, False, False, False, True, False, False, False]
    rows = [row(f"c{i}", "coop", right0[i], 0) for i in range(8)]
    rows += [row(f"c{i}", "fab", right1[i], 1 + i % 2, "fabricate=2") for i in range(8)]
    t = behaviour_table(rows, ["coop", "fab"], judge="J")
    ref, line = t["lines"]
    assert ref["accuracy"] == 5 / 8 and ref["accuracy_ci95"] == list(wilson_interval(5, 8))
    both, only_ref, only_this = 1, 4, 1  # c0 both; c1 c2 c5 c6 only at level 0; c4 only at level 2
    assert line["mcnemar_p"] == mcnemar_exact(only_ref, only_this)
    assert line["accuracy_diff"] == (only_this - only_ref) / 8
    assert line["accuracy_diff_ci95"] == list(paired_difference_interval(both, only_ref, only_this, 2))
    assert line["value"] == pytest.approx(1.5 / 4) and line["check_diff"] == pytest.approx(1.5 / 4)
    assert line["moved"] == "yes" and t["judge"] == "J"
    # invented less often than at level 0 in every cell: moved the other way; up in some cells and down in others: not shown
    down = [row(f"c{i}", "fab-1", True, 0, "fabricate=1") for i in range(8)]
    mixed = [row(f"c{i}", "fab-3", True, [0, 1][i % 2], "fabricate=3") for i in range(8)]
    base = [row(f"c{i}", "coop", right0[i], 1 - (i % 2) * (i % 4 == 1)) for i in range(8)]
    lines = behaviour_table(base + down + mixed, ["coop", "fab-1", "fab-3"])["lines"]
    assert [x["moved"] for x in lines[1:]] == ["the other way", "not shown"], lines
    assert behaviour_table([r for r in rows if r["condition"] == "fab"], ["fab"])["reference"] is None
    # a condition whose every cell errored is no level 0; one cell gives a figure and no interval
    broken = [{"case_id": "c0", "seed": 0, "condition": "down", "error": "backend died"}]
    one = behaviour_table(broken + rows[:1] + rows[8:9], ["down", "coop", "fab"])
    assert one["reference"] == "coop" and one["lines"][1]["ci95"] == [None, None]
    assert one["lines"][1]["moved"] == "too few cells" and one["lines"][1]["check_diff_ci95"] == [None, None]
    assert behaviour_table([r for r in rows if r["condition"] == "coop"], ["coop"]) is None


def test_a_consultation_takes_the_flag(tmp_path, capsys):
    spec = build_spec(None, {"cases": "demo", "limit": 2, "protocol.patient_behaviour": "proficiency=3"})
    result = run_bench(spec, BenchOptions(out=tmp_path / "p", progress=False))
    rows = read_results(result.out / "results.jsonl")
    assert [r["patient_behaviour"] for r in rows] == ["proficiency=3", "proficiency=3"]
    md = (result.out / "report.md").read_text()
    assert "No condition of this run has the cooperative patient" in md
