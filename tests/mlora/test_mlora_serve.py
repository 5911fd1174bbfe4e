"""Ray Serve: one base per replica, adapters multiplexed by id, answered over HTTP."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest
import torch

from raystack.data.sft import greedy_generate
from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, Segment
from raystack.mlora.export import save_peft
from raystack.models import build_model

pytestmark = pytest.mark.cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict, adapter: str | None) -> tuple[int, dict | str]:
    headers = {"Content-Type": "application/json"}
    if adapter:
        headers["serve_multiplexed_model_id"] = adapter
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_serve_multiplexes_adapters_over_http(ray_cluster, tmp_path):
    from ray import serve

    from raystack.apps.serve_lora import LoRAServer

    base = BatchLoRAModel(build_model("tiny-1m", seed=0)).eval()
    g = torch.Generator().manual_seed(0)
    for name, scale in (("alpha", 3.0), ("beta", 2.0)):
        spec = AdapterSpec(name, "lora", r=4, alpha=8, target_modules=("lm_head", "v_proj"))
        base.add_adapter(spec)
        with torch.no_grad():
            for w in base.adapter_weights(name).values():
                w.lora_B.normal_(0, scale, generator=g)
        save_peft(tmp_path / name, spec, base.adapter_state(name), "tiny-1m")
    prompts = ["rev abc=", "add 2+3="]
    expected = {n: greedy_generate(lambda ids, n=n: base(ids, [Segment(n, 0, ids.shape[0])]), prompts, 6)
                for n in ("alpha", "beta")}
    expected[None] = greedy_generate(lambda ids: base(ids, []), prompts, 6)
    assert expected["alpha"] != expected["beta"]

    port = _free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(LoRAServer.bind(base="tiny-1m", adapters_dir=str(tmp_path), max_new_tokens=6),
                  name="lora", route_prefix="/lora")
        url = f"http://127.0.0.1:{port}/lora"
        for adapter in ("alpha", "beta", "alpha", None):
            status, out = _post(url, {"prompts": prompts}, adapter)
            assert status == 200, out
            assert out["completions"] == expected[adapter] and out["adapter"] == adapter
        status, out = _post(url, {"prompt": "x"}, "missing")
        assert status >= 400 and "missing" in str(out)
    finally:
        serve.shutdown()
