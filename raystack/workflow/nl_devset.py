"""Development set for the natural-language planner: prompts with gold workflow structures.

Gold is written by hand in a compact form: ``steps`` and ``edges`` are space-separated, with
``name*3`` meaning three of them; ``constructs`` lists map / concurrent / when / otherwise /
loop / exit:<kind>. ``refuse`` prompts must be refused (never guessed).
"""

from __future__ import annotations

from typing import Any

_PIPE = "load_csv>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model"
_GEN = "make_dataset>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model"

DEVSET: list[dict[str, Any]] = [
    {"prompt": "Load data/iris.csv, split it 80/20, train a logistic model for 30 epochs, evaluate it and deploy it as iris.",
     "steps": "load_csv split_data train_model evaluate_model deploy_model",
     "edges": _PIPE + " evaluate_model>deploy_model", "constructs": ""},
    {"prompt": "Read sales.parquet, drop rows with missing values, normalize the features, split with 25% test, train a linear model and evaluate it.",
     "steps": "load_parquet clean_data normalize split_data train_model evaluate_model",
     "edges": "load_parquet>clean_data clean_data>normalize normalize>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model",
     "constructs": ""},
    {"prompt": "Generate a synthetic dataset with 1000 rows. Train logistic, knn and centroid models, evaluate each, select the best. If the best accuracy is above 0.8, deploy it, otherwise notify me. Always at the end, clean up the tmp directory.",
     "steps": "make_dataset split_data train_model*3 evaluate_model*3 select_best deploy_model notify cleanup",
     "edges": "make_dataset>split_data split_data>train_model*3 split_data>evaluate_model*3 train_model>evaluate_model*3 evaluate_model>select_best*3 select_best>deploy_model select_best>notify",
     "constructs": "map when otherwise exit:always"},
    {"prompt": "Make a toy dataset, split it, train a logistic model until accuracy reaches 0.9 at most 5 times, then evaluate it.",
     "steps": "make_dataset split_data train_model evaluate_model", "edges": _GEN, "constructs": "loop"},
    {"prompt": "Load churn.csv. Split it. Train a logistic model and a knn model. Evaluate each and pick the best one. Save a report to out/report.json.",
     "steps": "load_csv split_data train_model*2 evaluate_model*2 select_best save_report",
     "edges": "load_csv>split_data split_data>train_model*2 split_data>evaluate_model*2 train_model>evaluate_model*2 evaluate_model>select_best*2 select_best>save_report",
     "constructs": "map"},
    {"prompt": "Generate a dataset with 500 samples and 4 features, split it 70/30, train a centroid classifier, evaluate it.",
     "steps": "make_dataset split_data train_model evaluate_model", "edges": _GEN, "constructs": ""},
    {"prompt": "Load data.csv, clean it, split it, train a linear model, evaluate it. If accuracy is at least 0.75, deploy the model as prod.",
     "steps": "load_csv clean_data split_data train_model evaluate_model deploy_model",
     "edges": "load_csv>clean_data clean_data>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model evaluate_model>deploy_model",
     "constructs": "when"},
    {"prompt": "Create synthetic data, split it, train logistic and linear models, evaluate each, select the best and save a report.",
     "steps": "make_dataset split_data train_model*2 evaluate_model*2 select_best save_report",
     "edges": "make_dataset>split_data split_data>train_model*2 split_data>evaluate_model*2 train_model>evaluate_model*2 evaluate_model>select_best*2 select_best>save_report",
     "constructs": "map"},
    {"prompt": "Pretrain a language model with EDiT for 200 steps on 2 workers.",
     "steps": "edit_pretrain", "edges": "", "constructs": ""},
    {"prompt": "Fine-tune 4 LoRA adapters with mLoRA for 50 steps, then notify me 'adapters ready'.",
     "steps": "mlora_finetune notify", "edges": "", "constructs": ""},
    {"prompt": "Train a DLRM recommendation model elastically for 300 steps. If anything fails, notify me.",
     "steps": "elastic_dlrm notify", "edges": "", "constructs": "exit:failure"},
    {"prompt": "In parallel, pretrain a language model with edit for 100 steps and train a dlrm recommendation model. If anything fails, notify me 'pretraining failed'.",
     "steps": "edit_pretrain elastic_dlrm notify", "edges": "", "constructs": "concurrent exit:failure"},
    {"prompt": "Load events.parquet, normalize it, split it, train a knn model, evaluate it and write a report to knn.json.",
     "steps": "load_parquet normalize split_data train_model evaluate_model save_report",
     "edges": "load_parquet>normalize normalize>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model evaluate_model>save_report",
     "constructs": ""},
    {"prompt": "Generate a dataset, split it, train a logistic model with learning rate 0.05 for 40 epochs, evaluate it, and deploy it.",
     "steps": "make_dataset split_data train_model evaluate_model deploy_model",
     "edges": _GEN + " evaluate_model>deploy_model", "constructs": ""},
    {"prompt": "Load train.csv; split it 90/10; train a logistic model until the score is at least 0.95, at most 8 iterations; evaluate it; deploy it as best.",
     "steps": "load_csv split_data train_model evaluate_model deploy_model",
     "edges": _PIPE + " evaluate_model>deploy_model", "constructs": "loop"},
    {"prompt": "Make a synthetic dataset, split it, train a logistic model, evaluate it. If the accuracy is below 0.6, notify me 'model too weak', otherwise deploy it.",
     "steps": "make_dataset split_data train_model evaluate_model notify deploy_model",
     "edges": _GEN + " evaluate_model>notify evaluate_model>deploy_model", "constructs": "when otherwise"},
    {"prompt": "Load customers.csv and clean it. Then split it and train linear, logistic, knn and centroid models. Evaluate each one and select the best.",
     "steps": "load_csv clean_data split_data train_model*4 evaluate_model*4 select_best",
     "edges": "load_csv>clean_data clean_data>split_data split_data>train_model*4 split_data>evaluate_model*4 train_model>evaluate_model*4 evaluate_model>select_best*4",
     "constructs": "map"},
    {"prompt": "Generate a dataset with 2000 rows, split it, train a logistic model and evaluate it. Always notify me at the end.",
     "steps": "make_dataset split_data train_model evaluate_model notify", "edges": _GEN,
     "constructs": "exit:always"},
    {"prompt": "Read features.parquet, split it 80/20, train a centroid model and evaluate it; no matter what, clean up the scratch directory.",
     "steps": "load_parquet split_data train_model evaluate_model cleanup",
     "edges": "load_parquet>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model",
     "constructs": "exit:always"},
    {"prompt": "Load iris.csv, normalize it, train a knn model and evaluate it.",
     "steps": "load_csv normalize split_data train_model evaluate_model",
     "edges": "load_csv>normalize normalize>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model",
     "constructs": ""},
    {"prompt": "Generate synthetic data, split it, train a logistic model until accuracy exceeds 0.85 up to 10 times, evaluate it, and if the accuracy is above 0.8, deploy it.",
     "steps": "make_dataset split_data train_model evaluate_model deploy_model",
     "edges": _GEN + " evaluate_model>deploy_model", "constructs": "loop when"},
    {"prompt": "Fine-tune 2 LoRA adapters for 30 steps. Always send a notification at the end.",
     "steps": "mlora_finetune notify", "edges": "", "constructs": "exit:always"},
    {"prompt": "Load data/train.parquet. Clean it. Normalize it. Split it 75/25. Train a linear model. Evaluate it. Save a report.",
     "steps": "load_parquet clean_data normalize split_data train_model evaluate_model save_report",
     "edges": "load_parquet>clean_data clean_data>normalize normalize>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model evaluate_model>save_report",
     "constructs": ""},
    {"prompt": "Create a toy dataset with 300 rows, split it, train knn and centroid models, evaluate each, pick the best, and deploy it as winner.",
     "steps": "make_dataset split_data train_model*2 evaluate_model*2 select_best deploy_model",
     "edges": "make_dataset>split_data split_data>train_model*2 split_data>evaluate_model*2 train_model>evaluate_model*2 evaluate_model>select_best*2 select_best>deploy_model",
     "constructs": "map"},
    {"prompt": "Pretrain a language model with EDiT for 50 steps, then fine-tune 3 LoRA adapters, then notify me 'done'.",
     "steps": "edit_pretrain mlora_finetune notify", "edges": "", "constructs": ""},
    {"prompt": "Load sales.csv, split it, train a logistic model, evaluate it, and save a report to sales_report.json. If the workflow fails, notify me.",
     "steps": "load_csv split_data train_model evaluate_model save_report notify",
     "edges": _PIPE + " evaluate_model>save_report", "constructs": "exit:failure"},
    {"prompt": "Generate a dataset, split it with 30% test, train linear and logistic models, evaluate each and select the best. If the best score is greater than 0.7, deploy it as prod, otherwise save a report.",
     "steps": "make_dataset split_data train_model*2 evaluate_model*2 select_best deploy_model save_report",
     "edges": "make_dataset>split_data split_data>train_model*2 split_data>evaluate_model*2 train_model>evaluate_model*2 evaluate_model>select_best*2 select_best>deploy_model select_best>save_report",
     "constructs": "map when otherwise"},
    {"prompt": "Read a CSV file at input/x.csv, drop missing values, split it, train a centroid model, evaluate it.",
     "steps": "load_csv clean_data split_data train_model evaluate_model",
     "edges": "load_csv>clean_data clean_data>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model",
     "constructs": ""},
    {"prompt": "Make a synthetic dataset, split it, train a logistic model until accuracy reaches 0.99 at most 3 rounds, evaluate it and deploy it. Always clean up the tmp directory at the end.",
     "steps": "make_dataset split_data train_model evaluate_model deploy_model cleanup",
     "edges": _GEN + " evaluate_model>deploy_model", "constructs": "loop exit:always"},
    {"prompt": "Train a DLRM model on criteo-like data with 4 workers for 500 steps, then save a report.",
     "steps": "elastic_dlrm save_report", "edges": "elastic_dlrm>save_report", "constructs": ""},
    {"prompt": "Generate a dataset with 800 rows and 10 features. Normalize it. Split it 80/20. Train logistic, linear and knn models. Evaluate each. Select the best. Save a report to best.json.",
     "steps": "make_dataset normalize split_data train_model*3 evaluate_model*3 select_best save_report",
     "edges": "make_dataset>normalize normalize>split_data split_data>train_model*3 split_data>evaluate_model*3 train_model>evaluate_model*3 evaluate_model>select_best*3 select_best>save_report",
     "constructs": "map"},
    {"prompt": "Load housing.csv, clean it, split it, train a linear model and evaluate it. If the score is at least 0.9, deploy it, otherwise notify me 'retrain needed'. Whatever happens, clean up the scratch directory.",
     "steps": "load_csv clean_data split_data train_model evaluate_model deploy_model notify cleanup",
     "edges": "load_csv>clean_data clean_data>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model evaluate_model>deploy_model evaluate_model>notify",
     "constructs": "when otherwise exit:always"},
    {"prompt": "Generate data, split it, train a logistic model for 5 epochs, evaluate it with the error metric.",
     "steps": "make_dataset split_data train_model evaluate_model", "edges": _GEN, "constructs": ""},
    {"prompt": "Fine-tune LoRA adapters with mLoRA and train a DLRM recommendation model at the same time, then notify me.",
     "steps": "mlora_finetune elastic_dlrm notify", "edges": "", "constructs": "concurrent"},
    # -- must be refused ------------------------------------------------------------------
    {"prompt": "Book a flight to Paris and reserve a hotel.", "refuse": True},
    {"prompt": "Train a logistic model until it is good.", "refuse": True},
    {"prompt": "Generate a dataset, split it, train a logistic model until accuracy reaches 0.9.",
     "refuse": True, "note": "unbounded loop"},
    {"prompt": "Evaluate the model and deploy it.", "refuse": True, "note": "nothing makes a model"},
    {"prompt": "", "refuse": True},
    {"prompt": "Translate the documents into French and summarise them.", "refuse": True},
]


def _expand(text: str) -> list[str]:
    out = []
    for tok in text.split():
        name, _, n = tok.partition("*")
        out += [name] * (int(n) if n else 1)
    return sorted(out)


def gold_structure(item: dict[str, Any]) -> dict[str, list[str]]:
    """The gold structure of a dev-set item in the shape of ``planner_nl.structure``."""
    return {"steps": _expand(item["steps"]), "edges": _expand(item["edges"]),
            "constructs": sorted(item["constructs"].split())}


def score(planner=None, items: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Structural match of a planner on the dev set (or ``items``):
    {'accuracy', 'matched', 'total', 'misses'}."""
    from raystack.workflow.planner_nl import PlanRefused, RulePlanner, structure
    planner = planner or RulePlanner()
    matched, misses = 0, []
    items = DEVSET if items is None else items
    for item in items:
        try:
            got = structure(planner.plan(item["prompt"]))
        except PlanRefused as e:
            got = {"refused": e.reasons}
        want = {"refused": True} if item.get("refuse") else gold_structure(item)
        ok = ("refused" in got) if item.get("refuse") else got == want
        matched += ok
        if not ok:
            misses.append({"prompt": item["prompt"], "want": want, "got": got})
    return {"accuracy": matched / len(items), "matched": matched, "total": len(items),
            "misses": misses}


# Written after the planner was developed and not used to tune it: a fairer estimate.
HELDOUT: list[dict[str, Any]] = [
    {"prompt": "Ingest readings.csv, remove null rows, then fit a logistic classifier and assess it.",
     "steps": "load_csv clean_data split_data train_model evaluate_model",
     "edges": "load_csv>clean_data clean_data>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model",
     "constructs": ""},
    {"prompt": "Create 5000 synthetic examples, standardize them, split 85/15 and train knn and linear models; score each and choose the winner.",
     "steps": "make_dataset normalize split_data train_model*2 evaluate_model*2 select_best",
     "edges": "make_dataset>normalize normalize>split_data split_data>train_model*2 split_data>evaluate_model*2 train_model>evaluate_model*2 evaluate_model>select_best*2",
     "constructs": "map"},
    {"prompt": "Load metrics.parquet and split it. Train a centroid model. Evaluate it. When the accuracy is over 0.6, publish it as centroid.",
     "steps": "load_parquet split_data train_model evaluate_model deploy_model",
     "edges": "load_parquet>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model evaluate_model>deploy_model",
     "constructs": "when"},
    {"prompt": "Fine-tune 8 LoRA adapters and, whatever happens, send a notification.",
     "steps": "mlora_finetune notify", "edges": "", "constructs": "exit:always"},
    {"prompt": "Generate data, split it, keep training a logistic model until the score reaches 0.97, at most 6 rounds, then save a report.",
     "steps": "make_dataset split_data train_model save_report",
     "edges": "make_dataset>split_data split_data>train_model train_model>save_report", "constructs": "loop"},
    {"prompt": "Pretrain an LLM with EDiT on 4 workers, then fine-tune 2 adapters.",
     "steps": "edit_pretrain mlora_finetune", "edges": "", "constructs": ""},
    {"prompt": "Load a.csv, split it, train logistic, knn, centroid and linear models, evaluate each, select the best, and if the score is at least 0.9 deploy it, otherwise write a report.",
     "steps": "load_csv split_data train_model*4 evaluate_model*4 select_best deploy_model save_report",
     "edges": "load_csv>split_data split_data>train_model*4 split_data>evaluate_model*4 train_model>evaluate_model*4 evaluate_model>select_best*4 select_best>deploy_model select_best>save_report",
     "constructs": "map when otherwise"},
    {"prompt": "Make a toy dataset, split it, train a linear model and evaluate it. On failure, notify me 'linear failed'.",
     "steps": "make_dataset split_data train_model evaluate_model notify",
     "edges": "make_dataset>split_data split_data>train_model split_data>evaluate_model train_model>evaluate_model",
     "constructs": "exit:failure"},
    {"prompt": "Order pizza for the team.", "refuse": True},
    {"prompt": "Train a logistic model forever until accuracy is 1.0.", "refuse": True},
]
