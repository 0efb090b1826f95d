"""A doctor built on the reference A2A SDK 0.3 (a2a-sdk 0.3.26, protocol 0.3), as an
agent author of 2025 built it: ``A2AStarletteApplication`` with a ``DefaultRequestHandler``.

It runs as its own process (``python tests/a2a_sdk03_agent.py MODE``, with the 0.3 SDK
first on ``PYTHONPATH``: one environment holds one version of the ``a2a`` package, and
the tests' own is 1.x); it prints ``PORT <n>`` once it serves on 127.0.0.1, then one
``GOT <json>`` line per message it receives (text, contextId, taskId, JSON-RPC method). The modes are
tests/a2a_sdk1_agent.py's, the replies tests/a2a_doctor.py's.
"""
from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.a2a_doctor

import uvicorn  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.apps import A2AStarletteApplication  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart  # noqa: E402
from a2a.utils import new_agent_text_message, new_task  # noqa: E402

from tests import a2a_doctor  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "message"
TURNS: dict[str, int] = {}


class Doctor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        msg = context.message
        call = context.call_context
        print("GOT " + json.dumps({"text": text, "contextId": msg.context_id if msg else None,
                                   "taskId": msg.task_id if msg else None,
                                   "method": call.state.get("method") if call else None}), flush=True)
        if MODE == "stateless":
            line = a2a_doctor.stateless_reply(text)
        else:
            n = TURNS.get(context.context_id, 0)
            TURNS[context.context_id] = n + 1
            line = a2a_doctor.reply(n)
        if MODE in ("message", "stateless"):
            await event_queue.enqueue_event(new_agent_text_message(line, context_id=context.context_id))
            return
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        if MODE == "input_required" and not line.startswith("DIAGNOSIS READY"):
            await up.requires_input(new_agent_text_message(line, context_id=task.context_id, task_id=task.id),
                                    final=True)
            return
        await up.start_work()
        if MODE in ("chunked", "streaming"):
            pieces = a2a_doctor.chunks(line)
            for i, piece in enumerate(pieces):
                await up.add_artifact([Part(root=TextPart(text=piece))], artifact_id="reply", append=i > 0,
                                      last_chunk=i == len(pieces) - 1)
                if MODE == "streaming":
                    await asyncio.sleep(0.005)
        else:
            await up.add_artifact([Part(root=TextPart(text=line))], artifact_id="reply")
        await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    card = AgentCard(name="SDK 0.3 doctor", description="a doctor on the reference A2A SDK 0.3",
                     url=f"http://127.0.0.1:{port}/", version="0.3.26-test",
                     capabilities=AgentCapabilities(streaming=MODE == "streaming"),
                     default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                     skills=[AgentSkill(id="consult", name="consult", description="diagnoses", tags=["medicine"])])
    handler = DefaultRequestHandler(agent_executor=Doctor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    print(f"PORT {port}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
