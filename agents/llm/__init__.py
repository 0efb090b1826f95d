"""One small LLM protocol with named roles.

Every model call in medsim goes through :meth:`LLM.generate`. Backends:
``scripted`` (deterministic fake for tests), ``local`` / ``smollm2`` / ``gguf:PATH``
(llama.cpp in process: a context per role, or one batched context per model file,
``agents.llm.batched``), ``openai:BASE_URL`` (any OpenAI-compatible server) and
``a2a:URL`` (an external agent over the A2A protocol), each a registered backend kind
(:mod:`agents.llm.registry` says how to add one; :func:`agents.llm.conformance.check_backend`
checks it). Retries and the logging of every call are one function around any backend
(``agents.llm.calls.generate_logged``), not code inside each.
"""
from agents.llm.base import LLM, LLMError, Message, GenerateParams, Output, CallContext

__all__ = ["LLM", "LLMError", "Message", "GenerateParams", "Output", "CallContext"]
