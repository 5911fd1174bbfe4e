"""IR, API, validation and the local engine (no cluster)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wf_toys as T
from raystack.workflow import Workflow, WorkflowError, WorkflowIR, run_local
from raystack.workflow.api import validate
from raystack.workflow.ir import Condition, Loop, Ref, StepSpec, downstream_cone, topo_order


def _diamond(log=None, factor=2.0) -> Workflow:
    wf = Workflow("diamond")
    s = wf.step(T.source, id="src", n=4, log=log, ignore=["log"])
    a = wf.step(T.scale, id="a", xs=s, factor=factor, log=log, ignore=["log"])
    b = wf.step(T.scale, id="b", xs=s, factor=10.0, log=log, ignore=["log"])
    ta = wf.step(T.total, id="ta", xs=a, log=log, ignore=["log"])
    tb = wf.step(T.total, id="tb", xs=b, log=log, ignore=["log"])
    wf.step(T.add, id="sum", a=ta, b=tb, log=log, ignore=["log"])
    return wf


def test_api_builds_edges_from_outputs():
    ir = _diamond().build()
    assert set(ir.edges()) == {("src", "a"), ("src", "b"), ("a", "ta"), ("b", "tb"),
                               ("ta", "sum"), ("tb", "sum")}
    order = topo_order(ir)
    assert order.index("src") < order.index("a") < order.index("ta") < order.index("sum")
    assert downstream_cone(ir, {"a"}) == {"a", "ta", "sum"}


def test_step_ids_derive_from_content_not_position():
    def build(extra_first: bool):
        wf = Workflow("ids")
        if extra_first:
            wf.step(T.label, text="x")
        wf.step(T.source, n=3)
        return {s.fn + str(s.params): s.id for s in wf.build().steps}
    a, b = build(False), build(True)
    key = [k for k in a if "source" in k][0]
    assert a[key] == b[key] and a[key].startswith("source-")


def test_run_local_diamond_value():
    rep = run_local(_diamond().build(), store=None)
    assert rep.status == "succeeded"
    assert rep.output("sum") == 2.0 * 6 + 10.0 * 6


def test_cycle_is_rejected_before_running():
    ir = WorkflowIR("cyc", [
        StepSpec("a", "wf_toys:total", {"xs": Ref("b")}),
        StepSpec("b", "wf_toys:total", {"xs": Ref("a")}),
    ])
    with pytest.raises(WorkflowError, match="cycle"):
        validate(ir)


def test_missing_input_and_unknown_step_rejected():
    ir = WorkflowIR("m", [StepSpec("a", "wf_toys:total", {})])
    with pytest.raises(WorkflowError, match="missing input 'xs'"):
        validate(ir, allow=["wf_toys"])
    ir = WorkflowIR("m", [StepSpec("a", "wf_toys:total", {"xs": Ref("nope")})])
    with pytest.raises(WorkflowError, match="unknown step 'nope'"):
        validate(ir, allow=["wf_toys"])


def test_bad_parameter_type_rejected(tmp_path):
    wf = Workflow("bad")
    wf.step(T.source, id="s", n="four")
    with pytest.raises(WorkflowError, match=r"'n' = 'four'.*expected int"):
        wf.build()
    wf = Workflow("bad2")
    wf.step(T.source, id="s", n=3, colour="red")
    with pytest.raises(WorkflowError, match="unknown parameter 'colour'"):
        wf.build()


def test_when_and_otherwise_decided_at_run_time():
    for n, expect_big in ((5, True), (2, False)):
        wf = Workflow("cond")
        t = wf.step(T.total, id="t", xs=wf.step(T.source, id="s", n=n))
        with wf.when(t, ">", 5):
            wf.step(T.label, id="big", text="big")
        with wf.otherwise():
            wf.step(T.label, id="small", text="small")
        rep = run_local(wf.build())
        assert ("big" in rep.executed) == expect_big
        assert ("small" in rep.executed) == (not expect_big)
        assert ("big" in rep.skipped) == (not expect_big)


def test_a_skipped_step_with_passthrough_hands_its_input_on_and_what_follows_runs(tmp_path):
    """A transform applied only when needed: skipped, it hands its input on (same value, key and
    digest), so the step after it runs on the untransformed data; run, it hands on its output.
    The cache keys of what follows see the value they got."""
    from raystack.workflow.store import ArtifactStore
    for n, scaled in ((5, True), (2, False)):
        wf = Workflow("maybe-scale")
        s = wf.step(T.source, id="s", n=n)
        t = wf.step(T.total, id="t", xs=s)
        with wf.when(t, ">", 5):
            big = wf.step(T.scale, id="scale", xs=s, factor=10.0, passthrough="xs")
        wf.step(T.total, id="after", xs=big)
        ir = wf.build()
        assert WorkflowIR.from_json(ir.to_json()).by_id()["scale"].passthrough == "xs"
        rep = run_local(ir, store=ArtifactStore(str(tmp_path / f"store{n}")))
        assert ("scale" in rep.executed) == scaled and ("scale" in rep.skipped) == (not scaled)
        assert "after" in rep.executed
        assert rep.output("after") == sum(range(n)) * (10.0 if scaled else 1.0)
    # without passthrough the step after a skipped one is skipped (the default)
    wf = Workflow("skip")
    s = wf.step(T.source, id="s", n=2)
    with wf.when(wf.step(T.total, id="t", xs=s), ">", 5):
        big = wf.step(T.scale, id="scale", xs=s, factor=10.0)
    wf.step(T.total, id="after", xs=big)
    assert "after" in run_local(wf.build()).skipped
    # a passthrough needs a condition and a parameter holding a whole upstream output
    wf = Workflow("bad")
    s = wf.step(T.source, id="s", n=2)
    wf.step(T.scale, id="scale", xs=s, passthrough="xs")
    with pytest.raises(WorkflowError, match="passthrough needs a 'when'"):
        validate(wf.build())
    wf = Workflow("bad2")
    s = wf.step(T.source, id="s", n=2)
    with wf.when(wf.step(T.total, id="t", xs=s), ">", 5):
        wf.step(T.scale, id="scale", xs=s, factor=2.0, passthrough="factor")
    with pytest.raises(WorkflowError, match="must name a parameter holding one whole upstream output"):
        validate(wf.build())


def test_bounded_loop_runs_to_its_bound_when_condition_never_holds():
    wf = Workflow("loop")
    wf.loop(T.grow, id="g", max_iterations=7, until=("done", "truthy"), x=0.0)
    rep = run_local(wf.build())
    assert rep.results["g"].iterations == 7 and rep.output("g") == {"x": 1.0, "done": False}


def test_loop_carry_feeds_previous_output():
    wf = Workflow("loopc")

    wf.loop(T.scale, id="g", carry="xs", max_iterations=5, until=(0, ">=", 100), xs=[1.0],
            factor=2.0)
    rep = run_local(wf.build())
    assert rep.results["g"].iterations == 5 and rep.output("g") == [32.0]
    wf = Workflow("loopd")
    wf.loop(T.scale, id="g", carry="xs", max_iterations=10, until=(0, ">=", 16), xs=[1.0],
            factor=2.0)
    rep = run_local(wf.build())
    assert rep.results["g"].iterations == 4 and rep.output("g") == [16.0]


def test_retries_then_failure_local(tmp_path):
    wf = Workflow("retry")
    wf.step(T.flaky, id="f", fail_times=2, counter=str(tmp_path / "c"), retries=2)
    assert run_local(wf.build()).status == "succeeded"
    wf = Workflow("retry2")
    wf.step(T.flaky, id="f", fail_times=5, counter=str(tmp_path / "d"), retries=1)
    rep = run_local(wf.build())
    assert rep.status == "failed" and "flaky failure 2" in rep.failed["f"]


def test_exit_handlers_follow_status(tmp_path):
    p = str(tmp_path / "st")
    wf = Workflow("exit")
    wf.step(T.boom, id="b")
    wf.on_exit(T.status_note, kind="always", id="always", path=p)
    wf.on_exit(T.status_note, kind="success", id="onok", path=p)
    rep = run_local(wf.build())
    assert rep.status == "failed"
    assert open(p).read().split() == ["failed"]
    assert "onok" not in rep.exits and rep.exits["always"].status == "done"


# -- round trip ---------------------------------------------------------------------------
_json = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) |
                     st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(
                         st.text(min_size=1, max_size=5).filter(lambda k: not k.startswith("$")),
                         c, max_size=3), max_leaves=8)


@st.composite
def _irs(draw):
    n = draw(st.integers(1, 8))
    steps = []
    for i in range(n):
        params = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3))
        if i and draw(st.booleans()):
            params["x"] = Ref(f"s{draw(st.integers(0, i - 1))}", draw(st.none() | st.text(max_size=3)))
        when = []
        if i and draw(st.booleans()):
            when = [Condition(Ref(f"s{draw(st.integers(0, i - 1))}"),
                              draw(st.sampled_from([">", "==", "truthy"])), draw(_json),
                              draw(st.booleans()))]
        loop = draw(st.none() | st.builds(Loop, st.integers(1, 5), st.none() | st.just("a")))
        steps.append(StepSpec(
            f"s{i}", "mod:fn", params, when=when, loop=loop,
            exit=draw(st.sampled_from([None, None, "always", "failure"])),
            group=draw(st.none() | st.just("map:m")), retries=draw(st.integers(0, 3)),
            timeout_s=draw(st.none() | st.floats(0.1, 100)),
            resources=draw(st.dictionaries(st.sampled_from(["num_cpus", "memory"]),
                                           st.floats(0, 8), max_size=2)),
            cache=draw(st.booleans()), ignore=draw(st.lists(st.sampled_from(["a", "b"]), max_size=2)),
            code_hash=draw(st.text("0123456789abcdef", max_size=16))))
    return WorkflowIR(draw(st.text(min_size=1, max_size=10)), steps)


@settings(max_examples=40, deadline=None)
@given(_irs())
def test_ir_round_trips_json_and_yaml(ir):
    assert WorkflowIR.from_json(ir.to_json()) == ir
    assert WorkflowIR.from_yaml(ir.to_yaml()) == ir
    assert json.loads(WorkflowIR.from_json(ir.to_json()).to_json()) == json.loads(ir.to_json())


def test_ir_rejects_unknown_version_and_fields():
    with pytest.raises(WorkflowError, match="version 9"):
        WorkflowIR.from_dict({"version": 9, "name": "x", "steps": []})
    with pytest.raises(WorkflowError, match="unknown IR fields"):
        WorkflowIR.from_dict({"name": "x", "steps": [{"id": "a", "fn": "m:f", "colour": 1}]})
