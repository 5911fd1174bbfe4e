"""The demo workflow's steps. Each runs as a Ray task (the workflow runner's), drives one part
through its Python API, and returns a small JSON-ready dict that the workflow cache stores.
Paths in the results point under the demo's output directory, which outlives the run."""
from __future__ import annotations

import json
import time
from pathlib import Path

SYNTHETIC_TASKS = ("reverse", "sort", "copy", "arithmetic")
# lm_head too: the tiny base is briefly pretrained, and a frozen head limits what adapters can express.
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head")


def pretrain_edit(out_dir: str, steps: int = 120, seed: int = 0) -> dict:
    """EDiT pretraining of the tiny Llama on the standard-library corpus, 2 replicas."""
    import raystack.edit

    r = raystack.edit.pretrain({
        "model": "tiny-1m", "mode": "edit", "ranks": 2, "steps": steps,
        "sync": {"h": 8, "warmup_steps": 8},
        "data": {"max_bytes": 1_000_000, "batch_size": 8, "seq_len": 128},
        "run": {"out_dir": str(Path(out_dir) / "edit"), "seed": seed, "eval_every": 4, "checkpoint_every": 0},
    }, progress=False)
    m = r.metrics
    return {"model_dir": r.checkpoint, "steps": int(m["steps"]), "tokens": int(m["tokens"]), "seconds": m["seconds"],
            "tokens_per_s": m["tokens_per_s"], "train_loss": m["train_loss"], "val_loss": m["val_loss"],
            "sync_seconds": m["sync_seconds"], "outliers": int(m["outliers"]), "replacements": int(m["replacements"])}


def _mlora_config(base_dir: str, out_dir: str, tasks: list[str], steps: int, lr: float, r: int = 16):
    from raystack.mlora.config import load_mlora_config

    return load_mlora_config({
        "base": base_dir, "seed": 0, "output_dir": out_dir,
        "datasets": [{"name": t, "synthetic": t, "num_examples": 1000, "seed": i} for i, t in enumerate(tasks)],
        "adapters": [{"name": f"{t}_lora", "type": "lora", "r": r, "alpha": 2.0 * r, "lr": lr, "seed": i,
                      "target_modules": list(TARGETS)} for i, t in enumerate(tasks)],
        "tasks": [{"adapter": f"{t}_lora", "dataset": t, "batch_size": 16, "micro_batch_size": 8,
                   "max_steps": steps, "cutoff_len": 32, "save_steps": max(steps // 2, 1)} for t in tasks],
        "pipeline": {"stages": 2, "balance": "params", "window_steps": max(steps // 4, 1)},
    })


def adapter_trial(base_dir: str, task: str, steps: int, lr: float) -> dict:
    """One Tune trial: a single adapter trained in-process; its held-out token accuracy."""
    import tempfile

    import torch

    from raystack.mlora.trainer import token_accuracy, train_single_process

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = _mlora_config(base_dir, tmp, [task], steps, lr)
        stage, jobs = train_single_process(cfg)
        examples = cfg.dataset(task).eval_set()[:64]
        acc = token_accuracy(stage.model if hasattr(stage, "model") else stage, f"{task}_lora", examples)
    return {"token_acc": acc, "final_loss": jobs[f"{task}_lora"].losses[-1]}


def tune_adapter_lr(base_dir: str, task: str = "reverse", lrs: list[float] = (1e-3, 3e-3, 1e-2),
                    steps: int = 30) -> dict:
    """A small Ray Tune grid over the adapters' learning rate (one cheap trial per value)."""
    from ray import tune as rtune

    from raystack.actors.workflow.tune import tune

    t0 = time.time()
    res = tune(adapter_trial, {"lr": rtune.grid_search(list(lrs))}, metric="token_acc", mode="max",
               scheduler="fifo", num_samples=1, resources={"cpu": 1}, max_iterations=1,
               fixed={"base_dir": base_dir, "task": task, "steps": steps})
    return {"best_lr": float(res.best_config["lr"]), "best_token_acc": float(res.best_metric),
            "trials": [{"lr": float(t["config"]["lr"]), "token_acc": float(t["best"])} for t in res.per_trial],
            "seconds": time.time() - t0}


def finetune_mlora(base_dir: str, out_dir: str, tasks: list[str], steps: int, tuned: dict) -> dict:
    """mLoRA: one adapter per task on the pretrained base, through the 2-stage pipeline."""
    import raystack.mlora

    cfg = _mlora_config(base_dir, str(Path(out_dir) / "mlora"), tasks, steps, tuned["best_lr"])
    r = raystack.mlora.finetune(cfg, progress=False)
    m = r.metrics
    curves = json.loads(Path(r.artifacts["losses"]).read_text())  # every step's loss, per adapter
    return {"adapters": {k.split(".", 1)[1]: v for k, v in r.artifacts.items() if k.startswith("adapter.")},
            "tasks": list(tasks), "lr": tuned["best_lr"], "loss_curves": curves, "seconds": m["seconds"],
            "tokens_per_s": m["tokens_per_s"], "restarts": int(m["restarts"]),
            "idle_fraction": m.get("idle_fraction", 0.0), "base_dir": base_dir}


def evaluate_adapter(mlora: dict, task: str) -> dict:
    """Exact-match and token accuracy of one trained adapter, before and after, on held-out data."""
    from raystack.mlora.trainer import evaluate_adapters

    cfg = _mlora_config(mlora["base_dir"], "/tmp", [task], 1, mlora["lr"])
    name = f"{task}_lora"
    acc = evaluate_adapters(cfg, {name: mlora["adapters"][name]})[name]
    return {"adapter": name, **{k: float(v) for k, v in acc.items()}}


def serve_adapters(mlora: dict) -> dict:
    """Deploy the Ray Serve app (base once, adapters multiplexed) and query each adapter once
    with a held-out example of its task."""
    from ray import serve

    from raystack.apps.serve_lora import LoRAServer
    from raystack.data.sft import synthetic_examples

    adapters_dir = str(Path(next(iter(mlora["adapters"].values()))).parent)
    app = LoRAServer.bind(base=mlora["base_dir"], adapters_dir=adapters_dir, max_new_tokens=12)
    started_serve = not serve_is_running()
    answers = {}
    try:
        handle = serve.run(app, name="raystack-demo-lora", route_prefix=None)
        for task in mlora["tasks"]:
            name = f"{task}_lora"
            ex = synthetic_examples(task, 1, seed=12345)[0]
            out = handle.options(multiplexed_model_id=name).generate.remote([ex.prompt]).result(timeout_s=120)
            answers[name] = {"prompt": ex.prompt, "expected": ex.response, "completion": out[0]}
    finally:
        if started_serve:  # Serve's controller and proxy were started here: stop them too
            serve.shutdown()
        else:  # someone else's Serve instance: remove only this step's app
            serve.delete("raystack-demo-lora")
    return {"answers": answers}


def serve_is_running() -> bool:
    """Whether a Ray Serve controller runs on the connected cluster."""
    import ray
    from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

    return any(a["name"] == SERVE_CONTROLLER_NAME and a["namespace"] == SERVE_NAMESPACE
               for a in ray.util.list_named_actors(all_namespaces=True))


def train_elastic(out_dir: str, rows: int = 60_000, kill_worker: bool = True) -> dict:
    """Elastic DLRM on generated Criteo-like data; one worker is really killed mid-epoch."""
    import ray

    import raystack.elastic

    run = raystack.elastic.train({
        "name": "demo-dlrm", "work_dir": str(Path(out_dir) / "elastic"),
        "data": {"generate_rows": rows, "generate_files": 4, "vocab": 1000, "rows_per_shard": 4096,
                 "out_dir": str(Path(out_dir) / "criteo")},
        # Sized once by the planner, then held: a worker kill while the planner is also resizing
        # can stall the job (an open elastic bug), so the demo shows failover at a fixed size.
        "resources": {"max_cpus": 3.0, "max_workers": 3, "max_ps": 2, "autoscale": False},
        "timeout_s": 600.0,
    }, wait=False, progress=False)
    killed: list[str] = []
    timeline: list[tuple[float, int, float]] = []
    t0 = time.time()

    def on_step(c) -> None:
        snap = c.snapshot()
        timeline.append((time.time() - t0, len([u for u in c.backend.units.values() if u.role == "worker"]),
                         snap["samples_per_s"]))
        if kill_worker and not killed and snap["rows_done"] > 0.3 * snap["rows_total"]:
            workers = [uid for uid, u in c.backend.units.items() if u.role == "worker" and uid in c.backend.actors]
            if workers:
                ray.kill(c.backend.actors[workers[0]])
                killed.append(workers[0])
    with run:  # leaving it stops the job's (detached) actors and removes its placement groups
        while not run.step().terminal:
            on_step(run.driver.job)
        r = run.result()
    m = r.metrics
    events = json.loads(Path(r.artifacts["events"]).read_text())
    return {"auc": m["auc"], "rows": int(m["rows"]), "seconds": m["seconds"], "samples_per_s": m["samples_per_s"],
            "lost": int(m["lost"]), "duplicated": int(m["duplicated"]), "killed": killed,
            "final_config": {k[len("final_"):]: int(v) if k in ("final_workers", "final_ps") else v
                             for k, v in m.items() if k.startswith("final_")},
            "events": events[-12:], "relaunches": int(m["relaunches"]), "timeline": timeline}
