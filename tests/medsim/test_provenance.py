"""What a run was started from, in every log header and in run.json: the command line,
the start time, the case file's SHA-256, each in-process model file's SHA-256 and the
instruction sets of the llama.cpp that ran it."""
import hashlib
import json
import os
from datetime import datetime, timezone

from agents.cases.registry import resolve_case_path
from agents.events import read_events
from agents.llm import local_model
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.provenance import file_sha256, llama_cpp_build, model_hashes, run_provenance
from medsim.cli import main


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _utc(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def test_every_header_and_run_json_carry_the_command_start_time_and_case_file_hash(tmp_path):
    out = tmp_path / "run"
    argv = ["bench", "--cases", "demo", "--llm", "scripted", "--limit", "3", "--out", str(out), "--no-progress"]
    before = datetime.now(timezone.utc).replace(microsecond=0)
    assert main(argv) == 0
    after = datetime.now(timezone.utc)
    demo = _sha(resolve_case_path("demo"))
    headers = [read_events(f)[0] for f in sorted((out / "events").iterdir())]
    assert len(headers) == 3
    for h in headers:
        assert h["type"] == "header" and h["command"] == ["medsim", *argv]
        assert before <= _utc(h["started"]) <= after
        assert h["cases_sha256"] == demo and h["model_sha256"] == {}  # scripted: no model file
        assert h["llama_cpp_build"] is None  # ... and no llama.cpp
        assert h["git_revision"] and "python" in h["packages"] and h["models"]["doctor"] == "scripted"
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == ["medsim", *argv] and run["started"] == headers[0]["started"]
    assert run["cases_sha256"] == demo and run["model_sha256"] == {} and "python" in run["packages"]
    assert "earlier" not in run
    # a resumed run records this invocation and keeps the earlier one
    assert main([*argv, "--resume"]) == 0
    again = json.loads((out / "run.json").read_text())
    assert again["command"] == ["medsim", *argv, "--resume"]
    assert again["earlier"] == [{"command": run["command"], "started": run["started"],
                                 "git_revision": run["git_revision"]}]


def test_a_consult_log_header_carries_them_too(tmp_path, capsys):
    log = tmp_path / "one.jsonl"
    argv = ["consult", "--llm", "scripted", "--case", "demo-002", "--log", str(log)]
    assert main(argv) == 0
    h = read_events(log)[0]
    assert h["command"] == ["medsim", *argv] and _utc(h["started"])
    assert h["cases_sha256"] == _sha(resolve_case_path("demo"))


def test_model_files_are_hashed_once_per_file(tmp_path):
    gguf, proj = tmp_path / "m.gguf", tmp_path / "proj.gguf"
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    proj.write_bytes(b"GGUF projector")
    llm = LlamaCppLLM(gguf, LlamaPool())  # nothing is loaded before a call
    models = {"doctor": f"gguf:{gguf}", "patient": f"gguf:{gguf}", "judge": "openai:http://h/v1#big"}
    want = _sha(gguf)
    assert model_hashes(models, {"doctor": llm, "patient": llm, "judge": object()}) == {f"gguf:{gguf}": want}
    # cached per (file, size, modification time): the bytes are not read again
    st = gguf.stat()
    gguf.write_bytes(b"x" * st.st_size)
    os.utime(gguf, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_sha256(gguf) == want
    # a file changed since is hashed again
    os.utime(gguf, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert file_sha256(gguf) == _sha(gguf) != want
    vision = LlamaCppLLM(gguf, LlamaPool(), projector=proj)
    assert model_hashes({"vision": "gguf:m,p"}, {"vision": vision}) == {"gguf:m,p": _sha(gguf),
                                                                        "gguf:m,p (projector)": _sha(proj)}
    prov = run_provenance(cases_file=resolve_case_path("demo"), models={"vision": "gguf:m,p"}, llms={"vision": vision},
                          command=["medsim", "x"], started="2025-01-01T00:00:00Z")
    assert prov == {"command": ["medsim", "x"], "started": "2025-01-01T00:00:00Z",
                    "cases_sha256": _sha(resolve_case_path("demo")),
                    "model_sha256": {"gguf:m,p": _sha(gguf), "gguf:m,p (projector)": _sha(proj)},
                    "llama_cpp_build": llama_cpp_build()}


def test_the_embedded_model_takes_the_checksum_verified_when_it_was_assembled(tmp_path, monkeypatch):
    blob = b"GGUF" + b"\0" * 4096
    monkeypatch.setenv("MEDSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(local_model.EMBEDDED, "size", len(blob))
    monkeypatch.setattr(local_model.EMBEDDED, "sha256", "ab" * 32)
    target = tmp_path / "cache" / "models" / local_model.EMBEDDED.filename
    target.parent.mkdir(parents=True)
    target.write_bytes(blob)
    assert file_sha256(target) == "ab" * 32  # 1.1 GB is not read again for each run
    other = tmp_path / "copy.gguf"  # the same bytes elsewhere: hashed
    other.write_bytes(blob)
    assert file_sha256(other) == hashlib.sha256(blob).hexdigest()
