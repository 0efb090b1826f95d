"""The server backends' HTTP transport (agents/llm/transport.py) on loopback: calls per
second and latency of ``OpenAICompatLLM.generate`` to a local chat server that keeps
connections alive, one thread and several, the TCP connections opened, and the time to
import the client. ``--before DIR``: the same in another checkout (a ``git worktree`` of
the revision to compare with), alternating rounds, so both run on the same machine in the
same state.

    .venv/bin/python benchmarks/http_transport.py [--calls 400] [--threads 4] [--rounds 3] [--before DIR]

Each round of each tree runs in a process of its own. The figures are loopback: they
show what the transport itself costs per call (parsing, pooling, the deadline's watchdog),
which a real model server's seconds per reply dwarf.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
REPLY = json.dumps({"id": "x", "object": "chat.completion", "model": "bench", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "I have felt unwell for two days."},
     "finish_reason": "stop"}], "usage": {"prompt_tokens": 20, "completion_tokens": 8}}).encode()


class _Chat(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    ports: set = set()

    def log_message(self, *args):  # silence
        pass

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        _Chat.ports.add(self.client_address[1])
        # the whole reply in one write: the server's own headers-then-body writes would meet
        # the client's delayed ACK (40 ms a call) and hide what the client costs
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(REPLY)).encode() + b"\r\n\r\n" + REPLY)
        self.wfile.flush()


def one_round(calls: int, threads: int) -> dict:
    t0 = time.perf_counter()
    from agents.llm.base import CallContext, GenerateParams, Message
    from agents.llm.openai_compat import OpenAICompatLLM
    import_s = time.perf_counter() - t0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    llm = OpenAICompatLLM(url, "bench")
    msgs = [Message("system", "You are a patient."), Message("user", "What brings you in?")]
    params = GenerateParams(max_tokens=50, timeout_s=10.0)

    def timed(n: int, out: list[float]) -> None:
        for _ in range(n):
            t = time.perf_counter()
            llm.generate(msgs, params, CallContext("patient", "c", 1))
            out.append(time.perf_counter() - t)

    for _ in range(20):  # warm: imports inside the call path, the first connection
        llm.generate(msgs, params, CallContext("patient", "c", 1))
    _Chat.ports.clear()
    serial: list[float] = []
    t = time.perf_counter()
    timed(calls, serial)
    serial_s = time.perf_counter() - t
    serial_conns = len(_Chat.ports)
    _Chat.ports.clear()
    per: list[list[float]] = [[] for _ in range(threads)]
    ts = [threading.Thread(target=timed, args=(calls // threads, per[i])) for i in range(threads)]
    t = time.perf_counter()
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    parallel_s = time.perf_counter() - t
    server.shutdown()
    flat = sorted(x for p in per for x in p)
    serial.sort()
    return {"import_s": import_s, "serial_calls_s": calls / serial_s, "serial_p50_ms": 1000 * serial[len(serial) // 2],
            "serial_p95_ms": 1000 * serial[int(len(serial) * 0.95)], "serial_connections": serial_conns,
            "threads_calls_s": len(flat) / parallel_s, "threads_p95_ms": 1000 * flat[int(len(flat) * 0.95)],
            "threads_connections": len(_Chat.ports)}


def _child(tree: Path, args: argparse.Namespace) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", "--calls", str(args.calls),
                        "--threads", str(args.threads)], cwd=tree, env=env, stdout=subprocess.PIPE, text=True,
                       check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None, help="a checkout of the code to compare with")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one round
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_round(args.calls, args.threads)))
        return
    trees = [("after", HERE)] + ([("before", args.before.resolve())] if args.before else [])
    got: dict[str, list[dict]] = {k: [] for k, _ in trees}
    for r in range(args.rounds):
        for label, tree in (trees if r % 2 == 0 else trees[::-1]):
            got[label].append(_child(tree, args))
    print(f"{args.rounds} rounds of {args.calls} calls (serial) and {args.threads} threads x "
          f"{args.calls // args.threads} calls, loopback, {os.cpu_count()} cores; medians over rounds")
    keys = [("serial_calls_s", "calls/s, one thread", "{:.0f}"), ("serial_p50_ms", "p50 latency (ms)", "{:.2f}"),
            ("serial_p95_ms", "p95 latency (ms)", "{:.2f}"), ("serial_connections", "connections opened", "{:.0f}"),
            ("threads_calls_s", f"calls/s, {args.threads} threads", "{:.0f}"),
            ("threads_p95_ms", f"p95 latency, {args.threads} threads (ms)", "{:.2f}"),
            ("threads_connections", f"connections opened, {args.threads} threads", "{:.0f}"),
            ("import_s", "import of the client (s)", "{:.3f}")]
    print(f"  {'':38}" + "".join(f"{label:>12}" for label, _ in trees))
    for key, name, fmt in keys:
        print(f"  {name:38}" + "".join(f"{fmt.format(statistics.median(x[key] for x in got[label])):>12}"
                                       for label, _ in trees))


if __name__ == "__main__":
    main()
