"""The parts of raystack and their configs: one place that names each part's config class,
the field its ``--output-dir`` sets, and its documented example file ``configs/<part>.yaml``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raystack.config import config_to_dict

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


@dataclass(frozen=True)
class PartSpec:
    name: str
    config: str          # "module:Class" of the part's root config dataclass
    output_field: str    # dotted field that --output-dir sets
    summary: str         # what the part does, one line

    def config_class(self) -> type:
        module, _, cls = self.config.partition(":")
        return getattr(importlib.import_module(module), cls)


PARTS: dict[str, PartSpec] = {p.name: p for p in (
    PartSpec("edit", "raystack.edit.config:EDiTConfig", "run.out_dir",
             "EDiT / A-EDiT local-SGD pretraining"),
    PartSpec("mlora", "raystack.mlora.config:MLoRAConfig", "output_dir",
             "mLoRA: many LoRA/DoRA adapters fine-tuned at once on one base, pipelined"),
    PartSpec("elastic", "raystack.elastic.config:ElasticConfig", "work_dir",
             "elastic DLRM training: the planner sizes and heals the job within a budget"),
    PartSpec("workflow", "raystack.workflow.config:WorkflowConfig", "store",
             "workflows: cache, store, eviction, splitting, cluster, planner"),
)}


def yaml_header(part: str) -> list[str]:
    """The comment lines at the top of ``configs/<part>.yaml`` and of ``--print-config``."""
    return [f"raystack {part}: {PARTS[part].summary}.",
            f"Every field with its default. Run: raystack {part} --config configs/{part}.yaml "
            f"[--set FIELD=VALUE ...]",
            f"Generated from the field declarations: raystack {part} --print-config > configs/{part}.yaml"]


def render_part_yaml(part: str, cfg: Any = None) -> str:
    """The commented YAML of a part's config (``cfg``, or the defaults)."""
    from raystack.config_render import render_yaml

    cfg = cfg if cfg is not None else PARTS[part].config_class()()
    return render_yaml(cfg, yaml_header(part))


def output_override(part: str, directory: str) -> dict:
    """The nested override that points a part's outputs at ``directory``."""
    *parents, leaf = PARTS[part].output_field.split(".")
    out: dict = {leaf: directory}
    for p in reversed(parents):
        out = {p: out}
    return out


def defaults_dict(part: str) -> dict:
    return config_to_dict(PARTS[part].config_class()())


DOCS_DIR = CONFIG_DIR.parent / "docs"


def doc_table_markers(part: str) -> tuple[str, str]:
    return f"<!-- config:{part} -->", f"<!-- /config:{part} -->"


def with_config_table(doc: str, part: str) -> str:
    """``doc`` (docs/<part>.md) with the generated config table between its markers."""
    from raystack.config_render import render_table

    begin, end = doc_table_markers(part)
    head, found, rest = doc.partition(begin)
    if not found or end not in rest:
        raise ValueError(f"docs/{part}.md lacks the markers {begin} ... {end}")
    return f"{head}{begin}\n{render_table(PARTS[part].config_class())}{end}{rest.split(end, 1)[1]}"


def write_generated_files() -> list[Path]:
    """Regenerate configs/<part>.yaml and the config tables of docs/<part>.md (a source checkout)."""
    written = []
    for part in PARTS:
        target = CONFIG_DIR / f"{part}.yaml"
        target.write_text(render_part_yaml(part))
        doc = DOCS_DIR / f"{part}.md"
        doc.write_text(with_config_table(doc.read_text(), part))
        written += [target, doc]
    return written


if __name__ == "__main__":  # python -m raystack.parts: refresh the generated config files and tables
    for path in write_generated_files():
        print(path)
