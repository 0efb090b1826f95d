"""llama.cpp is built for the CPU it runs on (the Makefile's ``GGML_CPU_ARGS``): the
instruction sets the CPU reports are in the build, AMX is not (its kernels evaluate a
step of several rows otherwise than a step of one: the batched engine would stop giving
the serial path's text), and every in-process run's header says what the build has."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.events import read_events
from agents.provenance import llama_cpp_build
from medsim.cli import main

pytestmark = pytest.mark.llama


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _build() -> set[str]:
    build = llama_cpp_build()
    if build is None:
        if os.environ.get("MEDSIM_REQUIRE_LLAMA"):
            pytest.fail("llama-cpp-python does not import")
        pytest.skip("llama-cpp-python not installed")
    return set(build.split())


# what the CPU reports (/proc/cpuinfo) -> what llama.cpp's build then has
SETS = {"AVX2": {"avx2"}, "FMA": {"fma"}, "F16C": {"f16c"}, "AVX_VNNI": {"avx_vnni"},
        "AVX512": {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"},
        "AVX512_VNNI": {"avx512f", "avx512_vnni"}, "AVX512_VBMI": {"avx512f", "avx512vbmi"},
        "AVX512_BF16": {"avx512f", "avx512_bf16"}}


def test_the_build_has_the_instruction_sets_this_cpu_reports_and_no_amx():
    flags, build = _cpu_flags(), _build()
    if not flags:
        pytest.skip("no x86 flags in /proc/cpuinfo")
    want = {name for name, needs in SETS.items() if needs <= flags}
    assert want <= build, f"llama.cpp was built without {sorted(want - build)} (make venv builds it for this CPU)"
    assert not {name for name in SETS if not SETS[name] <= flags} & build  # nothing this CPU lacks
    assert not {s for s in build if s.startswith("AMX")}


def test_an_in_process_run_names_the_build_in_its_header(smol, tmp_path):
    log = tmp_path / "one.jsonl"
    assert main(["consult", "--llm", "smollm2", "--case", "demo-002", "--max-turns", "1", "--log", str(log)]) == 0
    header = read_events(log)[0]
    assert header["llama_cpp_build"] == llama_cpp_build() and "AVX2" in header["llama_cpp_build"].split()
