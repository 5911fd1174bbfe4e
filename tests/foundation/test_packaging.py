"""The wheel installs one top-level package, `raystack`, holding the design card's folders
(`actors/` -> `raystack.actors`, `apps/` -> `raystack.apps`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _source_packages() -> set[str]:
    names = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "raystack").rglob("__init__.py")}
    for folder in ("actors", "apps"):
        names |= {"raystack." + ".".join(p.parent.relative_to(ROOT).parts)
                  for p in (ROOT / folder).rglob("__init__.py")}
    return names


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel built from this tree, installed (no dependencies) into an empty directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp / "dist"), str(ROOT)], check=True, capture_output=True, cwd=tmp)
    wheel = next((tmp / "dist").glob("raystack-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(tmp / "site"), str(wheel)], check=True, capture_output=True, cwd=tmp)
    return tmp / "site"


def test_only_raystack_is_top_level(installed):
    top = {p.name for p in installed.iterdir() if p.name != "bin"}
    assert {n for n in top if not n.endswith(".dist-info")} == {"raystack"}


def test_every_source_package_is_in_the_wheel(installed):
    in_wheel = {".".join(p.parent.relative_to(installed).parts)
                for p in (installed / "raystack").rglob("__init__.py")}
    missing = _source_packages() - in_wheel
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_installed_layers_import_by_their_namespace(installed, tmp_path):
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import raystack.actors.edit, raystack.apps.cli; "
            "print(raystack.actors.edit.__file__)")
    out = subprocess.run([sys.executable, "-c", code, str(installed)], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().startswith(str(installed / "raystack" / "actors"))


@pytest.mark.parametrize("module", ["raystack.workflow.nl.rules", "raystack.preflight.edit", "raystack.preflight.files",
                                    "raystack.data.suffixes"])
def test_the_planner_and_preflight_checks_start_without_torch(module):
    """`raystack workflow plan` and the CLI's checks of a config's files name file types from
    raystack.data without importing torch (about 2 CPU-seconds a process); the data package's
    torch-backed names still load when asked for."""
    code = (f"import sys, {module}; assert 'torch' not in sys.modules, 'torch imported'; "
            "from raystack.data import BatchStream, ByteTokenizer; assert 'torch' in sys.modules; "
            "import raystack.data as d; assert sorted(d.__all__) == sorted(n for n in d.__all__ if hasattr(d, n))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
