"""How `make test` splits the suite over its two xdist workers (tests/conftest.py): the modules on
the shared cluster in one unit, the modules that start only Ray instances of their own in a second,
every other module alone."""
from pathlib import Path

import conftest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def _modules() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in TESTS.rglob("test_*.py"))


def test_own_ray_modules_never_touch_the_shared_cluster():
    """An own-Ray module runs beside the cluster worker's modules: asking for the shared cluster
    there would start a second embedded cluster in the other worker, and connecting in-process
    would do the same."""
    forbidden = conftest.SHARED_OR_IN_PROCESS_RAY
    assert forbidden.search((TESTS / "elastic" / "test_elastic_cluster.py").read_text())   # it would notice
    owns = [m for m in _modules() if conftest.module_owns_ray(m)]
    assert {"tests/foundation/test_benchmarks.py", "tests/apps/test_notebooks.py",
            "tests/apps/test_jobs_submit.py"} <= set(owns)
    for module in owns:
        assert not forbidden.search((ROOT / module).read_text()), module
        assert conftest.work_unit(module) == conftest.OWN_RAY_SCOPE


def test_every_other_module_is_on_the_cluster_or_alone():
    units = {m: conftest.work_unit(m) for m in _modules()}
    assert units["tests/elastic/test_elastic_cluster.py"] == conftest.CLUSTER_SCOPE
    assert units["tests/workflow/test_workflow_planner.py"] == "tests/workflow/test_workflow_planner.py"
    assert {u for m, u in units.items() if u not in (conftest.CLUSTER_SCOPE, conftest.OWN_RAY_SCOPE)} == {
        m for m in units if not conftest.module_needs_cluster(m) and not conftest.module_owns_ray(m)}
