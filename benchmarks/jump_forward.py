"""Jump-forward decoding (agents.llm.drafts) on the embedded model: the calls of logged
consultations replayed greedy (temperature 0) through two pools of this checkout, one
decoding a token per step, one with drafts (and the lazy grammar), call by call in the
same order, so both contexts see the same history. Prints, per role: seconds, completion
tokens, the share that came from kept drafts, and how many replies differ (a near tie
flipped by a row's logits in a step of several rows); and what a step of N rows costs.

    .venv/bin/python benchmarks/jump_forward.py [LOG.jsonl ...]

Without logs it first runs ``medsim consult --cases demo --case demo-007 --llm local
--max-turns 6`` greedy and replays its calls. Run it on an idle machine: the columns are
seconds.
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from agents.events import read_events  # noqa: E402
from agents.llm import llamacpp  # noqa: E402
from agents.llm.base import CallContext, GenerateParams, Message  # noqa: E402
from agents.llm.local_model import embedded_model_path  # noqa: E402

GREEDY = "".join(f"[roles.{r}]\ntemperature = 0.0\n" for r in ("doctor", "patient", "measurement", "judge"))


def _consult_log(work: Path) -> Path:
    config, log = work / "greedy.toml", work / "consult.jsonl"
    config.write_text(GREEDY, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "medsim", "consult", "--cases", "demo", "--case", "demo-007", "--llm", "local",
                    "--max-turns", "6", "--config", str(config), "--log", str(log)], cwd=HERE, check=True,
                   env=dict(os.environ, PYTHONPATH=str(HERE)), stdout=subprocess.DEVNULL)
    return log


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="*", type=Path, help="event logs whose llm_call events are replayed")
    args = ap.parse_args()
    logs = args.logs or [_consult_log(Path(tempfile.mkdtemp(prefix="jump-forward-")))]
    calls = [e for f in logs for e in read_events(f) if e.get("type") == "llm_call"]
    # a step's cost by its rows: Llama.eval timed inside the call's own wrapper
    rows: dict[bool, collections.Counter] = {False: collections.Counter(), True: collections.Counter()}
    secs: dict[bool, collections.Counter] = {False: collections.Counter(), True: collections.Counter()}
    plain_cm = llamacpp._jump_forward
    current = [False]

    @contextmanager
    def timed(llm, drafter, steps, **kw):  # noqa: ANN001, ANN003 - a benchmark's shim
        with plain_cm(llm, drafter, steps, **kw):
            inner = llm.eval

            def ev(tokens):  # noqa: ANN001, ANN202
                t0 = time.perf_counter()
                inner(tokens)
                k = len(tokens) if len(tokens) <= 16 else 0  # 0: a prompt's evaluation
                rows[current[0]][k] += 1
                secs[current[0]][k] += time.perf_counter() - t0

            llm.eval = ev
            yield

    llamacpp._jump_forward = timed
    path = embedded_model_path()
    llms = {jf: llamacpp.LlamaCppLLM(path, llamacpp.LlamaPool(jump_forward=jf)) for jf in (False, True)}
    per_role: dict[str, dict] = {}
    for i, e in enumerate(calls):
        msgs = [Message(m["role"], m["content"]) for m in e["messages"]]
        p = e["params"]
        params = GenerateParams(temperature=0.0, max_tokens=p.get("max_tokens", 256), seed=p.get("seed", 0),
                                timeout_s=600.0, response_schema=p.get("response_schema"), stop=tuple(p.get("stop") or ()))
        outs = {}
        for jf in ((False, True) if i % 2 == 0 else (True, False)):  # alternate which goes first
            current[0] = jf
            outs[jf] = llms[jf].generate(msgs, params, CallContext(e["role"], "jf", e["turn"]))
        r = per_role.setdefault(e["role"], {"calls": 0, "differ": 0, "s": [0.0, 0.0], "tokens": [0, 0], "drafted": 0})
        r["calls"] += 1
        r["differ"] += outs[False].text != outs[True].text
        for k, jf in enumerate((False, True)):
            r["s"][k] += outs[jf].latency_s
            r["tokens"][k] += outs[jf].completion_tokens
        r["drafted"] += outs[True].drafted_tokens or 0
        print(f"  {e['role']:<10} plain {outs[False].latency_s:6.2f} s  jump-forward {outs[True].latency_s:6.2f} s  "
              f"{outs[True].drafted_tokens}/{outs[True].completion_tokens} drafted", file=sys.stderr, flush=True)
    print(f"\n{len(calls)} calls from {', '.join(str(p) for p in logs)}; embedded model, greedy, {os.cpu_count()} cores")
    print(f"{'role':<12}{'calls':>6}{'plain s':>10}{'jf s':>9}{'ratio':>7}{'tokens':>9}{'drafted':>9}{'differ':>8}")
    tot = [0.0, 0.0]
    for role, r in per_role.items():
        tot[0] += r["s"][0]
        tot[1] += r["s"][1]
        print(f"{role:<12}{r['calls']:>6}{r['s'][0]:>10.1f}{r['s'][1]:>9.1f}{r['s'][1] / r['s'][0]:>7.2f}"
              f"{r['tokens'][1]:>9}{r['drafted'] / max(1, r['tokens'][1]):>9.0%}{r['differ']:>8}")
    print(f"{'all':<12}{len(calls):>6}{tot[0]:>10.1f}{tot[1]:>9.1f}{tot[1] / tot[0]:>7.2f}")
    print("\nms per llama_decode by rows in the step (jump-forward's pool; 0 = a prompt's evaluation):")
    for k in sorted(rows[True]):
        print(f"  {k:>3} rows: {rows[True][k]:>4} steps, {1000 * secs[True][k] / rows[True][k]:7.1f} ms")


if __name__ == "__main__":
    main()
