"""Which driver runs each part, resolved by dotted ``"module:attr"`` names at call time.

``raystack/`` never imports ``raystack.actors`` (the layering is apps -> actors -> raystack),
yet ``raystack.edit.pretrain(cfg)`` must start EDiT's actors. The entry functions therefore
look their driver up here by name and import it only when a run starts, the way Ray resolves
runtime-env plugins from class paths. A third-party part registers its own names with
:func:`register`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class PartEntry:
    driver: str  # "module:attr" of the driver class (built with the config)
    config: str  # "module:attr" of the config dataclass


BUILTIN_PARTS: dict[str, PartEntry] = {
    "edit": PartEntry("raystack.actors.edit_driver:EDiTDriver", "raystack.edit.config:EDiTConfig"),
    "mlora": PartEntry("raystack.actors.mlora_driver:MLoRADriver", "raystack.mlora.config:MLoRAConfig"),
    "elastic": PartEntry("raystack.actors.elastic.controller:ElasticDriver",
                         "raystack.elastic.config:ElasticConfig"),
}
_parts: dict[str, PartEntry] = dict(BUILTIN_PARTS)


def register(part: str, driver: str, config: str) -> None:
    """Add (or replace) a part: its driver and config class as ``"module:attr"`` names."""
    for what, name in (("driver", driver), ("config", config)):
        if ":" not in name:
            raise ValueError(f"{what} must look like 'package.module:Attr', got {name!r}")
    _parts[part] = PartEntry(driver, config)


def parts() -> list[str]:
    return list(_parts)


def resolve(name: str):
    """The object a ``"module:attr"`` name points at (imported now)."""
    module, _, attr = name.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def entry(part: str) -> PartEntry:
    if part not in _parts:
        raise KeyError(f"no part named {part!r}; known parts: {', '.join(_parts)}")
    return _parts[part]


def driver_class(part: str):
    return resolve(entry(part).driver)


def config_class(part: str):
    return resolve(entry(part).config)
