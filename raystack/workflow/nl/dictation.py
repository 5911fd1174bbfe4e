"""Files and folders said aloud, the way a dictated request spells them: "returns dot csv" is
``returns.csv``, "out slash refunds dot csv" is ``out/refunds.csv``, "dot slash models slash
churn" is ``./models/churn``. A "dot" joins only a known file extension; a "slash" joins only a
chain that ends in such a file or starts at a folder a workflow writes to (``out``, ``models``,
``ckpt``, ``data``, ``adapters``) or at "dot slash": anything else ("pass slash fail") stays as said.
"""

from __future__ import annotations

import re

EXTENSIONS = ("csv", "tsv", "parquet", "jsonl", "json", "txt", "yaml", "yml")
FOLDERS = ("out", "output", "outputs", "models", "model", "ckpt", "checkpoints", "data", "adapters")
_EXT = "|".join(EXTENSIONS)
_DOT_EXT = re.compile(rf"\b([A-Za-z0-9][\w-]*)\s+dot\s+({_EXT})\b", re.I)
_DOT_SLASH = re.compile(r"\bdot\s+slash\s+(?=[A-Za-z0-9_])", re.I)
_CHAIN = re.compile(r"(?<![\w./-])((?:\./)?[\w.-]+(?:\s+slash\s+[\w.-]+)+)", re.I)


def _joined(chain: str) -> str:
    parts = re.split(r"\s+slash\s+", chain, flags=re.I)
    first = parts[0].removeprefix("./").lower()
    if chain.startswith("./") or first in FOLDERS or re.search(rf"\.(?:{_EXT})$", parts[-1], re.I):
        return "/".join(parts)
    return chain


# "min max normalize it": the scaling said aloud, without its hyphen
_MIN_MAX = re.compile(r"\bmin\s+max\b(?=\s+(?:normali[sz]\w*|scal\w*|rescal\w*))", re.I)


def spelled_paths(text: str) -> str:
    """``text`` with each file or folder said aloud written as a path (and "min max" scaling as
    "min-max")."""
    out = _MIN_MAX.sub("min-max", text)
    out = _DOT_EXT.sub(lambda m: f"{m.group(1)}.{m.group(2).lower()}", out)
    out = _DOT_SLASH.sub("./", out)
    return _CHAIN.sub(lambda m: _joined(m.group(1)), out)
