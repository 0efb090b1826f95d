"""How much the embedded model judge knows on the pairs the pre-check leaves to it.

For each labelled pair the deterministic pre-check cannot decide, the model is asked two
ways and its probabilities are read at the answer's first token (no sampling):
(a) the judge's own prompt, the reply opened with ``{"relation": "``: the probability of
"same" plus "more_specific" (what the grammar-constrained judge turns into "right");
(b) Yes/No questions, both ways round: "Is A another name for B?" and "Is A a type of B?".
Each score's ROC AUC (how often a right pair scores above a wrong one; 0.5 is chance) is
printed for the tuning and held-out parts, and for (a) the agreement at several thresholds.
A judge whose scores barely separate right from wrong cannot be thresholded into a better
one; that is what this measures (issue 22: docs/suites.md, "What the model knows").

    .venv/bin/python benchmarks/judge_signal.py [--without-thesaurus] [--pairs FILE] [--gguf PATH] [--out rows.jsonl]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import agents.judge as judge
from agents.condition_thesaurus import ConditionThesaurus
from agents.judge import RELATIONS, clean_diagnosis, diagnosis_for_judge, judge_messages, precheck
from agents.judge_eval import load_pairs, shipped_pairs
from agents.llm.local_model import embedded_model_path

YES_NO = "You are a senior physician. Answer the question with Yes or No only."


def question_same(a: str, b: str) -> str:
    return f'Is "{a}" another name (a synonym, an eponym, an abbreviation or an older name) for "{b}"?'


def question_kind(a: str, b: str) -> str:
    return f'Is "{a}" a type, subtype or more specific form of "{b}"?'


class Probe:
    """The model's next-token distribution after a ChatML prompt (Qwen2.5's template),
    reusing the KV cache's common prefix between calls."""

    def __init__(self, path: Path):
        import llama_cpp  # only this benchmark reads logits directly

        self.llm = llama_cpp.Llama(str(path), n_ctx=2048, n_threads=None, verbose=False, seed=0)

    def token(self, text: str) -> int:
        return self.llm.tokenize(text.encode(), add_bos=False, special=False)[0]

    def next_probs(self, system: str, user: str, opened: str = "") -> np.ndarray:
        llm = self.llm
        prompt = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                  f"<|im_start|>assistant\n{opened}")
        toks = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        held = list(llm._input_ids)
        common = 0
        while common < min(len(held), len(toks) - 1) and held[common] == toks[common]:
            common += 1
        llm.n_tokens = common
        llm._ctx.kv_cache_seq_rm(-1, common, -1)
        llm.eval(toks[common:])
        logits = np.array(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)), dtype=np.float64)
        p = np.exp(logits - logits.max())
        return p / p.sum()


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    return float(np.mean([[1.0 if a > b else 0.5 if a == b else 0.0 for b in neg] for a in pos]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, help="a labelled pairs JSONL file (default: the shipped set)")
    ap.add_argument("--gguf", type=Path, help="another GGUF model with Qwen2.5's chat template")
    ap.add_argument("--out", type=Path, help="write each pair's scores here (JSONL)")
    ap.add_argument("--without-thesaurus", action="store_true",
                    help="the pre-check without medsim's thesaurus (the pairs it left before the thesaurus)")
    args = ap.parse_args()
    if args.without_thesaurus:
        judge._THESAURUS = ConditionThesaurus(judge._vocab_key, Path("/nonexistent/thesaurus.txt"))
    pairs = load_pairs(args.pairs) if args.pairs else shipped_pairs()
    probe = Probe(args.gguf or embedded_model_path())
    first = {rel: probe.token(rel) for rel in RELATIONS}
    yes, no = probe.token("Yes"), probe.token("No")
    system, _ = (m.content for m in judge_messages("x", "y", "json"))
    todo = [p for p in pairs if p.label is not None and precheck(p.diagnosis, p.truth).correct is None]
    t0 = time.perf_counter()

    def p_yes(question: str) -> float:
        q = probe.next_probs(YES_NO, question)
        return float(q[yes] / (q[yes] + q[no]))

    # one kind of prompt at a time, so that each call re-evaluates only its own question
    # (the system prompt stays in the KV cache)
    rel = [probe.next_probs(system, judge_messages(p.diagnosis, p.truth, "json")[1].content, '{"relation": "')
           for p in todo]
    names = [(diagnosis_for_judge(p.diagnosis), clean_diagnosis(p.truth)) for p in todo]
    same_dk = [p_yes(question_same(d, t)) for d, t in names]
    same_kd = [p_yes(question_same(t, d)) for d, t in names]
    kind_dk = [p_yes(question_kind(d, t)) for d, t in names]
    rows = []
    for i, p in enumerate(todo):
        r = {name: float(rel[i][tok]) for name, tok in first.items()}
        rows.append({"truth": p.truth, "diagnosis": p.diagnosis, "label": p.label, "kind": p.kind, "split": p.split,
                     "relation": r, "right": r["same"] + r["more_specific"], "same_dk": same_dk[i],
                     "same_kd": same_kd[i], "kind_dk": kind_dk[i]})
    wall = time.perf_counter() - t0
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scores = {"judge prompt P(same or more specific)": lambda r: r["right"],
              "Yes: another name, diagnosis for key": lambda r: r["same_dk"],
              "Yes: another name, both ways (mean)": lambda r: (r["same_dk"] + r["same_kd"]) / 2,
              "Yes: a type of the key": lambda r: r["kind_dk"]}
    print(f"pairs the pre-check leaves to the model: {len(rows)} of {len(pairs)} ({wall:.0f}s)")
    for split in sorted({r["split"] for r in rows}):
        part = [r for r in rows if r["split"] == split]
        pos, neg = [r for r in part if r["label"]], [r for r in part if not r["label"]]
        print(f"\n== {split or 'tuning'}: n {len(part)} (right {len(pos)}, wrong {len(neg)})")
        for name, f in scores.items():
            print(f"  AUC {auc([f(r) for r in pos], [f(r) for r in neg]):.3f}  {name}")
        argmax = sum((max(r["relation"], key=r["relation"].get) in ("same", "more_specific")) == r["label"] for r in part)
        print(f"  judge prompt, argmax relation: {argmax}/{len(part)} agree")
        for th in (0.1, 0.2, 0.3, 0.4, 0.5):
            ok = sum((r["right"] >= th) == r["label"] for r in part)
            print(f"  judge prompt, right when P >= {th:.1f}: {ok}/{len(part)} agree")


if __name__ == "__main__":
    main()
