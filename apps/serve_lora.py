"""Serve trained adapters with Ray Serve: one base model per replica, adapters loaded by id.

    serve run raystack.apps.serve_lora:app base=tiny-1m adapters_dir=runs/mlora/adapters

Each replica holds the frozen base once and loads PEFT adapter directories
(``<adapters_dir>/<adapter id>``) on demand through ``serve.multiplexed``; the least recently
used adapter is dropped when more than ``max_adapters`` are loaded. Requests name the adapter
in the ``serve_multiplexed_model_id`` header (or ``handle.options(multiplexed_model_id=...)``):

    curl -H 'serve_multiplexed_model_id: reverse_lora' -d '{"prompt": "rev abc="}' localhost:8000/
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray import serve

DEFAULT_MAX_ADAPTERS = 8


class _LoadedAdapter:
    """An adapter attached to the replica's shared base; detached when Serve evicts it."""

    def __init__(self, model: Any, name: str, directory: Path) -> None:
        from raystack.mlora.export import load_peft_adapter

        self.model, self.name = model, name
        self.spec = load_peft_adapter(model, directory, name)

    def __del__(self) -> None:
        try:
            self.model.remove_adapter(self.name)
        except Exception:
            pass


@serve.deployment(ray_actor_options={"num_cpus": 1})
class LoRAServer:
    """Greedy generation with any trained adapter over one shared base."""

    def __init__(self, base: str = "tiny-1m", adapters_dir: str = "runs/mlora/adapters", seed: int = 0,
                 max_new_tokens: int = 16) -> None:
        import torch

        from raystack.mlora.batchlora import BatchLoRAModel
        from raystack.models import build_model

        torch.set_num_threads(1)
        self.model = BatchLoRAModel(build_model(base, seed=seed)).eval()
        self.dir = Path(adapters_dir)
        self.max_new_tokens = max_new_tokens

    @serve.multiplexed(max_num_models_per_replica=DEFAULT_MAX_ADAPTERS)
    async def get_adapter(self, adapter_id: str) -> _LoadedAdapter:
        directory = self.dir / adapter_id
        if not adapter_id.isidentifier() or not (directory / "adapter_config.json").is_file():
            raise ValueError(f"no adapter {adapter_id!r} under {self.dir}")
        return _LoadedAdapter(self.model, adapter_id, directory)

    def loaded(self) -> list[str]:
        return sorted(self.model.specs)

    async def generate(self, prompts: list[str], max_new_tokens: int | None = None) -> list[str]:
        from raystack.data.sft import greedy_generate
        from raystack.mlora.batchlora import Segment

        adapter_id = serve.get_multiplexed_model_id()
        segs_name = None
        if adapter_id:
            segs_name = (await self.get_adapter(adapter_id)).name

        def logits(ids):
            segs = [Segment(segs_name, 0, ids.shape[0])] if segs_name else []
            return self.model(ids, segs)

        return greedy_generate(logits, prompts, max_new_tokens or self.max_new_tokens)

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        body = await request.json()
        if not isinstance(body, dict) or not ("prompts" in body or "prompt" in body):
            return JSONResponse({"error": "send {'prompt': str} or {'prompts': [str, ...]}"}, status_code=400)
        prompts = body["prompts"] if "prompts" in body else [body["prompt"]]
        try:
            out = await self.generate(prompts, body.get("max_new_tokens"))
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return {"adapter": serve.get_multiplexed_model_id() or None,
                "completions": out, "completion": out[0]}


def app_builder(args: dict[str, str]) -> serve.Application:
    """``serve run raystack.apps.serve_lora:app base=... adapters_dir=...``."""
    return LoRAServer.bind(base=args.get("base", "tiny-1m"), adapters_dir=args.get("adapters_dir", "runs/mlora/adapters"),
                           seed=int(args.get("seed", 0)), max_new_tokens=int(args.get("max_new_tokens", 16)))


app = app_builder
