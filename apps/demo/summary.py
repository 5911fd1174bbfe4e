"""The demo's summary table (terminal) and report (Markdown with PNG plots)."""
from __future__ import annotations

from pathlib import Path

from raystack.apps.report import MarkdownReport, markdown_table


def _rows(outputs: dict, rep, wall_s: float) -> list[tuple[str, str]]:
    e, t, m, el = (outputs.get(k, {}) for k in ("edit_pretrain", "tune_adapter_lr", "mlora_finetune", "elastic_dlrm"))
    evals = [v for k, v in sorted(outputs.items()) if k.startswith("evaluate_adapter")]
    rows = []
    if e:
        rows += [("EDiT val loss (tiny-1m, 2 replicas)", f"{e['val_loss']:.3f} after {e['steps']} steps"),
                 ("EDiT throughput", f"{e['tokens_per_s']:,.0f} tokens/s, {e['sync_seconds']:.1f} s in sync, "
                                     f"{e['outliers']} outliers flagged")]
    if t:
        rows.append(("Tune: adapter learning rate", f"best {t['best_lr']:g} (token acc {t['best_token_acc']:.2f}) "
                                                   f"of {len(t['trials'])} trials"))
    if m:
        rows.append(("mLoRA (2-stage pipeline)", f"{len(m['adapters'])} adapters, {m['tokens_per_s']:,.0f} tokens/s, "
                                                f"idle {m['idle_fraction']:.0%}, {m['restarts']} stage restarts"))
    for v in evals:
        rows.append((f"  {v['adapter']} accuracy", f"exact {v['exact_before']:.2f} -> {v['exact_after']:.2f}, "
                                                    f"token {v['token_before']:.2f} -> {v['token_after']:.2f}"))
    s = outputs.get("serve_adapters", {})
    for name, a in s.get("answers", {}).items():
        rows.append((f"  Serve {name}", f"{a['prompt'].strip()!r} -> {a['completion'].strip()!r} "
                                          f"(expected {a['expected'].strip()!r})"))
    if el:
        rows += [("elastic DLRM AUC", f"{el['auc']:.4f} on held-out rows"),
                 ("elastic DLRM data", f"{el['rows']:,} rows, lost {el['lost']}, duplicated {el['duplicated']}, "
                                       f"{el['samples_per_s']:,.0f} samples/s"),
                 ("elastic controller", f"killed {', '.join(el['killed']) or 'none'}; final plan "
                                        f"{el['final_config'].get('workers', '?')} workers, {el['final_config'].get('ps', '?')} PS")]
    rows += [("cache", f"{len(rep.executed)} steps ran, {len(rep.cached)} served from the cache"),
             ("wall time", f"{wall_s:.0f} s")]
    return rows


def print_summary(outputs: dict, rep, wall_s: float) -> None:
    print("\n" + markdown_table(_rows(outputs, rep, wall_s), ("what", "result")))


def write_report(directory: Path, outputs: dict, rep, wall_s: float) -> Path:
    r = MarkdownReport(directory, "raystack demo report")
    r.section("Summary")
    r.table(_rows(outputs, rep, wall_s), ("what", "result"))
    m = outputs.get("mlora_finetune")
    if m:
        r.section("mLoRA loss curves", "Per-adapter training loss through the 2-stage pipeline.")
        r.plot("mlora_loss", "mLoRA adapters: training loss",
               {n: list(enumerate(v)) for n, v in m["loss_curves"].items()}, "step", "loss")
    t = outputs.get("tune_adapter_lr")
    if t:
        r.section("Tune", "Grid over the adapters' learning rate (one short trial each).")
        r.plot("tune", "Tune: token accuracy by learning rate",
               {"trials": sorted((tr["lr"], tr["token_acc"]) for tr in t["trials"])}, "learning rate", "token accuracy")
    el = outputs.get("elastic_dlrm")
    if el and el.get("timeline"):
        r.section("Elastic DLRM", "Workers and throughput over time; the dip is the injected worker kill.\n\n"
                  + "\n".join(f"- {ev}" for ev in el["events"]))
        r.plot("elastic_workers", "Elastic DLRM: workers over time",
               {"workers": [(x, w) for x, w, _ in el["timeline"]]}, "seconds", "workers")
        r.plot("elastic_throughput", "Elastic DLRM: throughput",
               {"samples/s": [(x, s) for x, _, s in el["timeline"]]}, "seconds", "samples/s")
    e = outputs.get("edit_pretrain")
    if e:
        r.section("EDiT", f"Checkpoint (loads with transformers `from_pretrained`): `{e['model_dir']}`")
    r.section("Steps", markdown_table([(sid, res.status, f"{res.seconds:.1f} s") for sid, res in rep.results.items()],
                                      ("step", "status", "seconds")))
    return r.write()
