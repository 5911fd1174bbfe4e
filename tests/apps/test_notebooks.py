"""Every notebook in apps/notebooks runs top to bottom on the embedded default (nbclient).

Each notebook runs in its own kernel with its own Ray instance; two run at once (the first
test starts them all, each test waits for its own), so one's Ray start overlaps the other's work.
"""
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.own_ray  # see tests/conftest.py: OWN_RAY_SCOPE
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "apps" / "notebooks").glob("*.ipynb"))
PARTS = {"edit", "mlora", "elastic", "workflow", "demo"}


def test_one_notebook_per_part_and_the_demo():
    assert {p.stem for p in NOTEBOOKS} >= PARTS


AT_ONCE = 2


def _execute(path: Path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=420, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError naming the failing cell
    return nb


@pytest.fixture(scope="module")
def executed(request) -> dict[str, Future]:
    """Start every selected notebook (AT_ONCE at a time); notebook name -> its run."""
    chosen = sorted({item.callspec.params["path"] for item in request.session.items
                     if item.originalname == "test_notebook_runs_top_to_bottom"}, key=lambda p: p.name)
    pool = ThreadPoolExecutor(max_workers=AT_ONCE)
    runs = {p.name: pool.submit(_execute, p) for p in chosen}
    yield runs
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # waits for its own run and part of another's; niced under xdist (tests/conftest.py)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, executed):
    nb = executed[path.name].result()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
