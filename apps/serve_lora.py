"""Serve trained adapters with Ray Serve: one base per replica, adapters loaded by id, an
OpenAI-compatible API in front.

    serve run raystack.apps.serve_lora:app base=runs/edit/checkpoint/model adapters_dir=runs/mlora/adapters

``OpenAIRouter`` (the HTTP ingress) answers ``POST /v1/completions``, ``POST /v1/chat/completions``
and ``GET /v1/models``; ``model`` names the adapter (its directory under ``adapters_dir``;
hyphens welcome), or the base itself for no adapter. ``"stream": true`` streams server-sent
events. The router hands each request to a ``LoRAServer`` replica through Serve's model
multiplexing, so requests for one adapter go to a replica that holds it.

``LoRAServer`` holds the frozen base and its tokenizer once per replica and loads PEFT adapter
directories (raystack's or peft's own) on demand, the least recently used evicted beyond
``max_adapters``; an adapter in use stays attached until its requests end. Generation runs
in a thread pool, token by token with a KV cache, so the replica keeps answering while it
generates and serves concurrent requests. The legacy route stays: POST ``{"prompt": ...}``
or ``{"prompts": [...]}`` with the header ``serve_multiplexed_model_id: <adapter>`` (greedy).

    curl localhost:8000/v1/completions -d '{"model": "qa-lora", "prompt": "Q: ...", "max_tokens": 16}'

FastAPI reads the route handlers' annotations at runtime, so this module does not use
``from __future__ import annotations``.
"""

import asyncio
import json
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from ray import serve

DEFAULT_MAX_ADAPTERS = 8
GENERATION_THREADS = 4
openai_api = FastAPI(title="raystack LoRA server")


def _params(body: dict, default_max_tokens: int) -> Any:
    """OpenAI's sampling fields (absent or null: OpenAI's defaults) as SamplingParams."""
    from raystack.models.generate import SamplingParams

    def get(key: str, default: Any) -> Any:
        return default if body.get(key) is None else body[key]

    stop = get("stop", ())
    try:
        return SamplingParams(max_new_tokens=int(get("max_tokens", get("max_new_tokens", default_max_tokens))),
                              temperature=float(get("temperature", 1.0)), top_p=float(get("top_p", 1.0)),
                              stop=(stop,) if isinstance(stop, str) else tuple(stop),
                              seed=None if body.get("seed") is None else int(body["seed"]))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad sampling parameters: {exc}") from None


@serve.deployment(ray_actor_options={"num_cpus": 1}, max_ongoing_requests=16)
class LoRAServer:
    """One base (BatchLoRA) and its tokenizer per replica; adapters multiplexed by id."""

    def __init__(self, base: str = "tiny-1m", adapters_dir: str = "runs/mlora/adapters", seed: int = 0,
                 max_new_tokens: int = 16, tokenizer: str | None = None) -> None:
        import concurrent.futures

        import torch

        from raystack.mlora.batchlora import BatchLoRAModel
        from raystack.mlora.export import base_reference
        from raystack.mlora.serving import LoRAEngine
        from raystack.models import build_model
        from raystack.models.tokenizer import load_tokenizer

        torch.set_num_threads(1)
        model = BatchLoRAModel(build_model(base, seed=seed, field="base"))
        self.engine = LoRAEngine(model, load_tokenizer(base, tokenizer, model_field="base"), adapters_dir,
                                 base_reference(base, seed).sha256)
        self.base = base
        self.max_new_tokens = max_new_tokens
        self.pool = concurrent.futures.ThreadPoolExecutor(GENERATION_THREADS, thread_name_prefix="generate")

    @serve.multiplexed(max_num_models_per_replica=DEFAULT_MAX_ADAPTERS)
    async def get_adapter(self, adapter_id: str) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, self.engine.load, adapter_id)

    async def _adapter(self) -> Any:
        adapter_id = serve.get_multiplexed_model_id()
        return await self.get_adapter(adapter_id) if adapter_id else None

    def models(self) -> list[str]:
        return [self.base, *self.engine.adapter_ids()]

    def loaded(self) -> list[str]:
        return sorted(self.engine.model.specs)

    def _prompt(self, request: dict) -> tuple[list[int], bool]:
        if "messages" in request:
            return self.engine.chat_prompt_ids(request["messages"]), True
        prompt = request.get("prompt")
        if not isinstance(prompt, str):
            raise ValueError("'prompt' must be a string")
        return self.engine.prompt_ids(prompt), False

    async def complete(self, request: dict) -> Any:
        """One completion (a `raystack.models.generate.Generation`)."""
        adapter = await self._adapter()
        ids, chat = self._prompt(request)
        params = _params(request, self.max_new_tokens)
        return await asyncio.get_running_loop().run_in_executor(
            self.pool, lambda: self.engine.complete(ids, params, adapter, chat))

    async def stream(self, request: dict):
        """The completion as it is generated (`raystack.models.generate.TextDelta` pieces)."""
        adapter = await self._adapter()
        ids, chat = self._prompt(request)
        deltas = self.engine.stream(ids, _params(request, self.max_new_tokens), adapter, chat)
        loop = asyncio.get_running_loop()
        try:
            while (delta := await loop.run_in_executor(self.pool, next, deltas, None)) is not None:
                yield delta
        finally:
            try:
                deltas.close()  # the client went away: end the generation, release the adapter
            except ValueError:  # a step is still running in the pool: it ends when collected
                pass

    async def generate(self, prompts: list[str], max_new_tokens: int | None = None) -> list[str]:
        """Greedy completions of several prompts (the legacy route)."""
        outs = []
        for p in prompts:
            out = await self.complete({"prompt": p, "temperature": 0.0, "max_tokens": max_new_tokens})
            outs.append(out.text)
        return outs

    async def __call__(self, request: Any) -> Any:
        """The legacy route: ``{"prompt"}`` / ``{"prompts"}``, adapter in the multiplexing header."""
        from raystack.mlora.serving import AdapterNotFound

        body = await request.json()
        if not isinstance(body, dict) or not ("prompts" in body or "prompt" in body):
            return JSONResponse({"error": "send {'prompt': str} or {'prompts': [str, ...]}"}, status_code=400)
        prompts = body["prompts"] if "prompts" in body else [body["prompt"]]
        try:
            out = await self.generate(prompts, body.get("max_new_tokens"))
        except AdapterNotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return {"adapter": serve.get_multiplexed_model_id() or None, "completions": out, "completion": out[0]}


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": code}},
                        status_code=status)


@serve.deployment(ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=64)
@serve.ingress(openai_api)
class OpenAIRouter:
    """The OpenAI-compatible HTTP API; ``model`` picks the adapter (the replica that holds it)."""

    def __init__(self, server: Any, base: str) -> None:
        self.server, self.base = server, base

    def _handle(self, model: str | None, stream: bool = False) -> Any:
        adapter = None if model in (None, "", self.base) else model
        return self.server.options(multiplexed_model_id=adapter or "", stream=stream)

    @openai_api.get("/v1/models")
    async def models(self) -> dict:
        names = await self.server.models.remote()
        return {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "raystack",
                                            "parent": None if n == self.base else self.base} for n in names]}

    @openai_api.post("/v1/completions")
    async def completions(self, request: Request) -> Any:
        body = await request.json()
        return await self._answer(body, chat=False)

    @openai_api.post("/v1/chat/completions")
    async def chat_completions(self, request: Request) -> Any:
        body = await request.json()
        return await self._answer(body, chat=True)

    async def _answer(self, body: Any, chat: bool) -> Any:
        from raystack.mlora.serving import AdapterNotFound

        if not isinstance(body, dict) or ("messages" if chat else "prompt") not in body:
            return _error(400, f"the request needs '{'messages' if chat else 'prompt'}'", "invalid_request")
        if int(body.get("n", 1)) != 1:
            return _error(400, "only n=1 is supported", "invalid_request")
        model = body.get("model")
        request = {k: body[k] for k in ("messages" if chat else "prompt", "max_tokens", "temperature", "top_p",
                                        "stop", "seed") if k in body}
        kind = "chat.completion" if chat else "text_completion"
        rid, created = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}", int(time.time())
        try:
            if body.get("stream"):
                chunks = self._handle(model, stream=True).stream.remote(request)
                first = await chunks.__anext__()  # errors (unknown adapter, bad parameters) surface here
                return StreamingResponse(self._events(first, chunks, rid, created, model, chat),
                                         media_type="text/event-stream")
            out = await self._handle(model).complete.remote(request)
        except AdapterNotFound as exc:
            return _error(404, str(exc), "model_not_found")
        except ValueError as exc:
            return _error(400, str(exc).splitlines()[-1], "invalid_request")
        choice = ({"index": 0, "message": {"role": "assistant", "content": out.text}} if chat
                  else {"index": 0, "text": out.text, "logprobs": None})
        choice["finish_reason"] = out.finish_reason
        usage = {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens,
                 "total_tokens": out.prompt_tokens + out.completion_tokens}
        return {"id": rid, "object": kind, "created": created, "model": model or self.base,
                "choices": [choice], "usage": usage}

    async def _events(self, first: Any, chunks: Any, rid: str, created: int, model: str | None, chat: bool):
        kind = "chat.completion.chunk" if chat else "text_completion"

        def event(delta: Any) -> str:
            if chat:
                choice = {"index": 0, "delta": {"content": delta.text}, "finish_reason": delta.finish_reason}
            else:
                choice = {"index": 0, "text": delta.text, "finish_reason": delta.finish_reason}
            doc = {"id": rid, "object": kind, "created": created, "model": model or self.base, "choices": [choice]}
            return f"data: {json.dumps(doc)}\n\n"

        yield event(first)
        async for delta in chunks:
            yield event(delta)
        yield "data: [DONE]\n\n"


def app_builder(args: dict[str, str]) -> serve.Application:
    """``serve run raystack.apps.serve_lora:app base=... adapters_dir=... [tokenizer=...]``."""
    base = args.get("base", "tiny-1m")
    server = LoRAServer.bind(base=base, adapters_dir=args.get("adapters_dir", "runs/mlora/adapters"),
                             seed=int(args.get("seed", 0)), max_new_tokens=int(args.get("max_new_tokens", 16)),
                             tokenizer=args.get("tokenizer"))
    return OpenAIRouter.bind(server, base)


app = app_builder
