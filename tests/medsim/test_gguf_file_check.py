"""A gguf: path is checked when the run is assembled, before anything runs or is written
(issue 23: ``--llm gguf:/etc/passwd`` was found only when every cell had errored): it must
be a regular file that starts with the bytes GGUF, and the error names the role and the
path."""
from __future__ import annotations

from pathlib import Path

import pytest

from medsim.assemble import AssemblyError
from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import build_spec


def _not_models(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGML" + bytes(100))  # a model file's name, another format's bytes
    return {"text": (text, "is not a GGUF model file"), "fake": (fake, "is not a GGUF model file"),
            "dir": (tmp_path, "not a regular file"), "missing": (tmp_path / "nope.gguf", "GGUF model file not found")}


@pytest.mark.parametrize("which", ["text", "fake", "dir", "missing"])
def test_a_gguf_path_that_is_no_gguf_file_stops_the_bench_before_it_runs(tmp_path, which):
    path, words = _not_models(tmp_path)[which]
    spec = build_spec(None, {"cases": "demo", "limit": 2, "llm": "scripted", "roles.patient.backend": f"gguf:{path}"})
    out = tmp_path / "run"
    with pytest.raises(AssemblyError) as e:
        run_bench(spec, BenchOptions(out=out, progress=False))
    assert str(e.value).startswith("roles.patient.backend: ") and words in str(e.value) and str(path) in str(e.value)
    assert not (out / "results.jsonl").exists()


def test_medsim_bench_with_gguf_etc_passwd_is_a_clear_error_and_writes_nothing(tmp_path, capsys):
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd here")
    out = tmp_path / "run"
    rc = main(["bench", "--llm", "gguf:/etc/passwd", "--limit", "1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert "roles.doctor.backend: /etc/passwd is not a GGUF model file" in err
