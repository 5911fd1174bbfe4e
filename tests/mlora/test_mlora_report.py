"""A pipeline run's report: what raystack.mlora.finetune's Result shows per window and in all."""

from __future__ import annotations

import pytest

from raystack.mlora.report import MB, PipelineRun, StagePeak, WindowReport


def test_history_rows_and_summary_carry_each_stages_predicted_and_measured_peak():
    windows = [WindowReport(0, 2.0, 400, [0.1, 0.3], {"a": 2.0}, (("a",),),
                            [StagePeak(110 * MB, 100 * MB, 200 * MB), StagePeak(90 * MB, 100 * MB, 200 * MB)]),
               WindowReport(1, 1.0, 300, [0.2, 0.2], {"a": 1.5, "b": 3.0}, (("a", "b"),),
                            [StagePeak(150 * MB, 160 * MB, 200 * MB), StagePeak(80 * MB, 70 * MB, 200 * MB)])]
    run = PipelineRun(adapters={"a": "/x/a"}, losses={"a": [2.0, 1.5], "b": [3.0]}, windows=windows, seconds=4.0,
                      refused={"c": "job 'c' can never fit"})
    rows = run.history_rows()
    assert rows[1] == {"window": 1, "tokens": 300.0, "seconds": 1.0, "tokens_per_s": 300.0,
                       "idle_stage0": 0.2, "idle_stage1": 0.2,
                       "memory_stage0_peak_mb": 160.0, "memory_stage1_peak_mb": 70.0,
                       "memory_stage0_predicted_mb": 150.0, "memory_stage1_predicted_mb": 80.0,
                       "loss.a": 1.5, "loss.b": 3.0}
    summary = run.summary()
    assert summary["tokens"] == 700.0 and summary["tokens_per_s"] == pytest.approx(175.0)
    assert summary["peak_mb.stage0"] == 160.0 and summary["peak_mb.stage1"] == 100.0  # worst window per stage
    assert summary["refused"] == 1.0 and summary["adapters"] == 1.0
    assert summary["loss.a"] == 1.5 and summary["idle_fraction"] == pytest.approx(0.2)
    assert windows[0].jobs == ("a",) and windows[0].memory[0].error == pytest.approx(0.1)
