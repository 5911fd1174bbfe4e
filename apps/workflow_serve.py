"""The catalog's ``serve_adapters`` step: deploy an adapter set with Ray Serve.

It lives in ``apps`` beside the Serve app it deploys (:mod:`raystack.apps.serve_lora`). The
step is a side effect (a live deployment is not something a cache can stand in for): it runs
every time, deploys the base once with the adapters multiplexed, and asks each adapter one
question to show it answers. In a dry run the deployment is deleted again at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from raystack.workflow.api import step
from raystack.workflow.artifacts import ADAPTER_SET, SERVED, Artifact
from raystack.workflow.context import RunContext

QUERY_TIMEOUT_S = 120


@step(side_effect=True)
def serve_adapters(adapters: Artifact, name: str = "raystack-adapters", max_new_tokens: int = 12,
                   prompt: str = "", run_context: Optional[RunContext] = None) -> Artifact:
    """Deploy the adapters over their base with Ray Serve (one replica, adapters loaded by id)
    and query each once; returns a ``served`` artifact naming the app and each answer."""
    from ray import serve

    from raystack.apps.serve_lora import LoRAServer
    from raystack.data.sft import synthetic_examples

    adapters.expect(ADAPTER_SET, what="serve_adapters.adapters")
    if not adapters.files:
        raise ValueError("serve_adapters: the adapter set is empty")
    base = adapters.info["base"]
    adapters_dir = str(Path(next(iter(adapters.files.values()))).parent)
    app = LoRAServer.bind(base=base, adapters_dir=adapters_dir, max_new_tokens=max_new_tokens)
    handle = serve.run(app, name=name, route_prefix=None)
    tasks = {t["adapter"]: t["dataset"] for t in adapters.info.get("config", {}).get("tasks", [])}
    synth = {d["name"]: d.get("synthetic") for d in adapters.info.get("config", {}).get("datasets", [])}
    answers = {}
    try:
        for adapter in adapters.files:
            task = synth.get(tasks.get(adapter, ""), None)
            text = prompt or (synthetic_examples(task, 1, seed=12345)[0].prompt if task else "hello")
            out = handle.options(multiplexed_model_id=adapter).generate.remote([text]).result(
                timeout_s=QUERY_TIMEOUT_S)
            answers[adapter] = {"prompt": text, "completion": out[0]}
    finally:
        if run_context is not None and run_context.tiny:
            serve.delete(name)
    return Artifact(SERVED, name, info={"app": name, "base": base, "adapters": sorted(adapters.files),
                                        "answers": answers,
                                        "deleted": bool(run_context and run_context.tiny)})
