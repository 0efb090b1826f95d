import json

import pytest

from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import RunSpec, SpecError, build_spec
from tests.helpers import log_bytes


def test_defaults_resolve_every_role_and_no_auto_value():
    s = build_spec(None, {})
    assert set(s.roles) == {"doctor", "patient", "measurement", "judge", "reflector", "vision"}
    assert s.roles["vision"].backend == "none"  # no vision model unless one is configured
    assert s.protocol.doctor_mode == "structured" and s.protocol.min_gathering == 3 and s.protocol.guards
    assert s.roles["doctor"].max_tokens == 120 and s.roles["judge"].temperature == 0.0
    assert "auto" not in s.to_toml()


def test_round_trip_through_dict_and_toml(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('cases = "demo"\nlimit = 4\nseeds = [1, 2]\nworkers = 3\nllm = "scripted"\n'
                    '[protocol]\nname = "agentclinic"\ndoctor_mode = "structured"\n'
                    '[roles.judge]\ntemperature = 0.1\n'
                    '[conditions.a]\n[conditions.b]\nprotocol = { min_gathering = 2 }\n'
                    '[roles.reflector]\nmax_tokens = 300\n')
    s = build_spec(toml)
    assert s.protocol.name == "agentclinic" and s.protocol.doctor_mode == "structured"
    assert s.protocol.prompt_style == "agentclinic" and s.protocol.min_gathering == 0 and not s.protocol.guards
    assert s.conditions["b"].protocol.min_gathering == 2 and s.conditions["a"].protocol.min_gathering == 0
    assert "reflector" in s.roles and s.roles["reflector"].max_tokens == 300  # role names are open
    assert RunSpec.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    again = tmp_path / "again.toml"
    again.write_text(s.to_toml())
    assert build_spec(again) == s


def test_a_run_from_a_toml_file_equals_the_same_run_from_flags(tmp_path, capsys):
    toml = tmp_path / "run.toml"
    toml.write_text('cases = "demo"\nlimit = 5\nseed = 3\nllm = "scripted"\n[protocol]\ndoctor_mode = "markers"\n'
                    'max_turns = 12\nmin_gathering = 2\n[roles.patient]\ntimeout_s = 30.0\n')
    flags = ["--cases", "demo", "--limit", "5", "--seed", "3", "--llm", "scripted", "--doctor-mode", "markers",
             "--max-turns", "12", "--min-gathering", "2"]
    patient = tmp_path / "patient.toml"  # what no flag sets: one role's timeout
    patient.write_text("[roles.patient]\ntimeout_s = 30.0\n")
    assert main(["bench", "--config", str(toml), "--out", str(tmp_path / "a"), "--no-progress"]) == 0
    assert main(["bench", *flags, "--config", str(patient), "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    a_files = sorted((tmp_path / "a" / "events").iterdir())
    b_files = sorted((tmp_path / "b" / "events").iterdir())
    assert len(a_files) == 5 and [p.name for p in a_files] == [p.name for p in b_files]
    assert all(log_bytes(x) == log_bytes(y) for x, y in zip(a_files, b_files))
    # config --show prints the same spec for both
    capsys.readouterr()
    main(["config", "--config", str(toml)])
    from_file = capsys.readouterr().out
    main(["config", *flags, "--config", str(patient)])
    assert capsys.readouterr().out == from_file and "timeout_s = 30.0" in from_file
    # and another setting gives other bytes (the comparison can fail)
    assert main(["bench", *flags, "--out", str(tmp_path / "c"), "--no-progress"]) == 0
    c_files = sorted((tmp_path / "c" / "events").iterdir())
    assert all(x.read_bytes() != y.read_bytes() for x, y in zip(a_files, c_files))


def test_flags_override_the_file(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('cases = "demo"\nseeds = [0, 1]\nllm = "scripted"\n[protocol]\nmax_turns = 8\n')
    s = build_spec(toml, {"seed": 5, "protocol.max_turns": 4})
    assert s.seeds == (5,) and s.protocol.max_turns == 4


@pytest.mark.parametrize("toml,message", [
    ('limit = 0', "limit: must be at least 1"),
    ('workers = -2', "workers: must be at least 1"),
    ('seeds = []', "seeds: expected a non-empty list"),
    ('seeds = [1, 1]', "each seed once"),
    ('seed = 1\nseeds = [2]', "not both"),
    ('lmit = 3', "unknown key 'lmit' (did you mean 'limit'?)"),
    ('[protocol]\ndoctormode = "markers"', "unknown key 'protocol.doctormode' (did you mean 'protocol.doctor_mode'?)"),
    ('[protocol]\nname = "agentclinc"', "protocol.name: must be one of medsim, agentclinic"),
    ('[protocol]\nmax_turns = 0', "protocol.max_turns: must be at least 1"),
    ('[protocol]\nmin_gathering = "3"', "protocol.min_gathering: expected an integer"),
    ('[protocol]\nguards = "yes"', "protocol.guards: expected true or false"),
    ('[protocol]\ndoctor_strategy = "focussed"', "protocol.doctor_strategy: must be one of turns, focused"),
    ('[protocol]\ndoctor_strategy = "focused"\ndoctor_mode = "markers"',
     "protocol.doctor_strategy: the focused doctor acts in structured turns"),
    ('[roles.doctor]\nbackend = "bogus"', "roles.doctor.backend: unknown backend 'bogus'"),
    ('[roles.judge]\nbackend = "openai:http://localhost:8000/v1"', "roles.judge.backend: 'openai:http://localhost:8000/v1' needs a model name"),
    ('[roles.judge]\nbackend = "openai:http://u:sk-123@host/v1"\nmodel = "m"', "credentials"),
    ('[roles.judge]\ntemperature = 3.5', "roles.judge.temperature: must be at least 0 and at most 2"),
    ('[roles.patient]\ntimeout_s = 0', "roles.patient.timeout_s: must be above 0"),
    ('[roles.patient]\nmax_tokens = 0', "roles.patient.max_tokens: must be at least 1"),
    ('[world]\ndoctors = 0', "world.doctors: must be at least 1"),
    ('[conditions.x]\nprotocol = { name = "nope" }', "conditions.x: protocol.name"),
    ('[conditions.x]\nseed = 3', "unknown key 'conditions.x.seed'"),
    ('roles = 3', "roles: expected a table"),
    ('this is not toml', "invalid TOML"),
])
def test_bad_specs_name_the_file_and_the_key(tmp_path, toml, message):
    p = tmp_path / "bad.toml"
    p.write_text(toml)
    with pytest.raises(SpecError) as e:
        build_spec(p)
    assert message in str(e.value) and str(p) in str(e.value)
    assert "sk-123" not in str(e.value)


def test_a_missing_or_binary_config_is_a_clear_error(tmp_path, capsys):
    assert main(["config", "--config", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read the config file" in capsys.readouterr().err
    p = tmp_path / "bin.toml"
    p.write_bytes(b"cases = \"\xff\"\n")
    assert main(["config", "--config", str(p)]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_resume_identity_ignores_how_a_run_is_executed():
    a, b = build_spec(None, {"workers": 1}), build_spec(None, {"workers": 8, "preflight": False})
    assert a.identity() == b.identity() and a != b


def test_run_json_and_every_header_hold_the_whole_spec(tmp_path):
    s = build_spec(None, {"limit": 2, "seeds": [0, 1]})
    o = run_bench(s, BenchOptions(out=tmp_path / "r", progress=False, command=["medsim", "bench", "x"]))
    run = json.loads((o.out / "run.json").read_text())
    assert RunSpec.from_dict(run["spec"]) == s and run["command"] == ["medsim", "bench", "x"]
    for f in (o.out / "events").iterdir():
        h = json.loads(f.read_text().splitlines()[0])
        assert RunSpec.from_dict(h["spec"]) == s and h["seed"] in (0, 1)


def test_server_doctors_default_to_markers_and_say_so():
    s = build_spec(None, {"roles.doctor.backend": "openai:http://127.0.0.1:1/v1", "model": "m"})
    assert s.protocol.doctor_mode == "markers" and s.roles["patient"].backend == "scripted"
    assert s.roles["doctor"].model == "m"


def test_the_doctor_strategy_is_named_only_when_it_is_not_the_default():
    assert "doctor_strategy" not in build_spec(None, {}).protocol.to_dict()  # old runs keep their identity
    assert build_spec(None, {"protocol.doctor_strategy": "turns"}).protocol.doctor_strategy is None
    s = build_spec(None, {"protocol.doctor_strategy": "focused", "roles.doctor.backend": "openai:http://127.0.0.1:1/v1",
                          "model": "m"})
    assert s.protocol.doctor_strategy == "focused" and s.protocol.doctor_mode == "structured"  # not markers
    assert s.protocol.to_dict()["doctor_strategy"] == "focused"


def test_the_run_spec_page_example_is_valid(tmp_path):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "run-spec.md").read_text(encoding="utf-8")
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    p = tmp_path / "readme.toml"
    p.write_text(block)
    s = build_spec(p)
    assert s.condition_names() == ["structured", "markers", "withholding", "cooperative"] and s.seeds == (0, 1, 2)
    assert s.protocol.patient_behaviour == (("recall", 1),)  # a table adds to the run's profile, text replaces it
    assert s.conditions["withholding"].protocol.patient_behaviour == (("withhold", 2), ("recall", 1))
    assert s.conditions["cooperative"].protocol.patient_behaviour is None
    assert s.roles["judge"].model == "Qwen/Qwen2.5-72B-Instruct" and s.roles["doctor"].backend == "local"
    assert s.conditions["markers"].protocol.doctor_mode == "markers"
