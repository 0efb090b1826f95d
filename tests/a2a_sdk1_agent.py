"""A doctor built on the reference A2A SDK, 1.x (protocol 1.0), served in this process on
127.0.0.1 by uvicorn, as an agent author would build it: ``AgentExecutor``,
``DefaultRequestHandlerV2`` with an in-memory task store, the SDK's JSON-RPC and card
routes. ``compat``: the SDK's 0.3 compatibility layer on the same endpoint;
``protocols``: the interfaces its card offers (("1.0",), ("1.0", "0.3"), ("0.3",), or a
binding medsim does not speak: ("GRPC 1.0",)).

Modes (tests/a2a_doctor.py says what the doctor answers): "message" (a Message),
"task" (a Task with one artifact), "chunked" (the artifact sent in pieces with
``append=True``, the common pattern of LLM agents on the SDK), "input_required" (each
turn but the last ends the task input-required, the next message continues it),
"streaming" (the card advertises streaming; chunks a few milliseconds apart), "stateless"
(keeps nothing between messages). Every message it received is kept in ``received``
(its text, contextId, taskId and the JSON-RPC method that brought it).
"""
from __future__ import annotations

import asyncio
import socket
import threading
from contextlib import contextmanager
from typing import Iterator

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

from tests import a2a_doctor

__all__ = ["SdkAgent", "sdk1_agent"]


class _Doctor(AgentExecutor):
    def __init__(self, agent: "SdkAgent"):
        self.agent = agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        a, text = self.agent, context.get_user_input()
        a.received.append({"text": text, "contextId": context.message.context_id if context.message else "",
                           "taskId": context.message.task_id if context.message else "",
                           "method": context.call_context.state.get("method")})
        if a.mode == "stateless":
            line = a2a_doctor.stateless_reply(text)
        else:
            turns = a.turns.setdefault(context.context_id, 0)
            a.turns[context.context_id] = turns + 1
            line = a2a_doctor.reply(turns)
        if a.mode in ("message", "stateless"):
            await event_queue.enqueue_event(new_text_message(line, context_id=context.context_id))
            return
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        if a.mode == "input_required" and not line.startswith("DIAGNOSIS READY"):
            await up.requires_input(new_text_message(line, context_id=task.context_id, task_id=task.id))
            return
        await up.start_work()
        if a.mode in ("chunked", "streaming"):
            pieces = a2a_doctor.chunks(line)
            for i, piece in enumerate(pieces):
                await up.add_artifact([new_text_part(piece)], artifact_id="reply", append=i > 0,
                                      last_chunk=i == len(pieces) - 1)
                if a.mode == "streaming":
                    await asyncio.sleep(0.005)
        else:
            await up.add_artifact([new_text_part(line)], artifact_id="reply")
        await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


class SdkAgent:
    def __init__(self, mode: str, *, compat: bool, protocols: tuple[str, ...]):
        assert mode in a2a_doctor.MODES, mode
        self.mode, self.compat, self.protocols = mode, compat, protocols
        self.received: list[dict] = []
        self.turns: dict[str, int] = {}
        self.url = ""

    def card(self, url: str) -> AgentCard:
        interfaces = []
        for p in self.protocols:
            binding, _, version = p.rpartition(" ")
            interfaces.append(AgentInterface(url=url, protocol_binding=binding or "JSONRPC", protocol_version=version))
        return AgentCard(name="SDK doctor", description="a doctor on the reference A2A SDK", version="1.3.0-test",
                         supported_interfaces=interfaces,
                         capabilities=AgentCapabilities(streaming=self.mode == "streaming"),
                         default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                         skills=[AgentSkill(id="consult", name="consult", description="diagnoses", tags=["medicine"])])


@contextmanager
def sdk1_agent(mode: str = "message", *, compat: bool = False, protocols: tuple[str, ...] = ("1.0",)
               ) -> Iterator[SdkAgent]:
    """The agent, serving until the block ends."""
    agent = SdkAgent(mode, compat=compat, protocols=protocols)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    agent.url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    card = agent.card(agent.url)
    handler = DefaultRequestHandlerV2(agent_executor=_Doctor(agent), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card),
                            *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=compat)])
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        threading.Event().wait(0.01)
    try:
        yield agent
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
