"""Any OpenAI-compatible chat completions server (vLLM, llama.cpp server, Ollama,
hosted APIs), with the standard library only. The API key comes from an environment
variable (``MEDSIM_API_KEY``, else ``OPENAI_API_KEY``) and is never logged."""
from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from typing import Sequence

from agents.llm.base import CallContext, GenerateParams, LLMError, Message, Output

__all__ = ["OpenAICompatLLM"]


class OpenAICompatLLM:
    def __init__(self, base_url: str, model: str, *, api_key_env: tuple[str, ...] = ("MEDSIM_API_KEY", "OPENAI_API_KEY")):
        if not model:
            raise ValueError("an OpenAI-compatible backend needs a model name (--model NAME)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai:{self.base_url}#{model}"
        self._key_env = api_key_env

    def _key(self) -> str | None:
        for var in self._key_env:
            if os.environ.get(var):
                return os.environ[var]
        return None

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        body = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
        }
        if params.stop:
            body["stop"] = list(params.stop)[:4]
        if params.response_schema:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": json.loads(params.response_schema), "strict": True}}
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers=headers, method="POST")
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=params.timeout_s) as resp:
                payload = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            transient = e.code in (408, 409, 425, 429) or e.code >= 500
            raise LLMError(f"HTTP {e.code} from {self.base_url}: {e.reason}", backend=self.name, transient=transient) from e
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as e:
            raise LLMError(f"cannot reach {self.base_url}: {getattr(e, 'reason', e)}", backend=self.name) from e
        except json.JSONDecodeError as e:
            raise LLMError(f"response from {self.base_url} is not JSON: {e}", backend=self.name) from e
        latency = time.perf_counter() - t0
        try:
            choice = payload["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as e:
            raise LLMError(f"unexpected response shape from {self.base_url}: {str(payload)[:200]}", backend=self.name) from e
        usage = payload.get("usage") or {}
        pt = int(usage.get("prompt_tokens") or 0)
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        return Output(
            text=text, model=self.name, prompt_tokens=pt,
            prompt_tokens_evaluated=(pt - int(cached)) if cached is not None else None,
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=latency, finish_reason=choice.get("finish_reason") or "stop",
        )
