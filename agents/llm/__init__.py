"""One small LLM protocol with named roles.

Every model call in medsim goes through :meth:`LLM.generate`. Backends:
``scripted`` (deterministic fake for tests), ``local`` / ``gguf:PATH`` (llama.cpp in
process), ``openai:BASE_URL`` (any OpenAI-compatible server) and ``a2a:URL`` (an
external agent over the A2A protocol), each a registered backend kind
(:mod:`agents.llm.registry` says how to add one; :func:`agents.llm.conformance.check_backend`
checks it). Retries and serialisation are wrappers, not code inside each backend.
"""
from agents.llm.base import LLM, LLMError, Message, GenerateParams, Output, CallContext

__all__ = ["LLM", "LLMError", "Message", "GenerateParams", "Output", "CallContext"]
