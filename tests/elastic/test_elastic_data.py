"""Criteo-like data, the real-Criteo converter, AUC, flash checkpoints and DLRM gradients."""
import numpy as np
import pytest

from raystack.data.criteo import (DataError, auc, convert_criteo_tsv, generate, list_files,
                                  read_rows)
from raystack.elastic.checkpoint import FlashCheckpointer
from raystack.runtime.storage import Storage
from raystack.elastic.dlrm import DLRMDense, DLRMSpec, forward_backward, init_table


def test_generated_rows_are_read_back_by_range_with_their_sample_ids(tmp_path):
    files = generate(tmp_path, rows=5000, files=2, vocab=50, row_group=512)
    assert [n for _, n in files] == [2500, 2500] and list_files(str(tmp_path)) == files
    b = read_rows(files[1][0], 700, 1900, vocab=50)
    assert (b.sample_id == np.arange(3200, 4400)).all()
    assert b.cat.max() < 50 and b.dense.shape == (1200, 13) and 0.05 < b.label.mean() < 0.95


def test_switching_sizes_in_one_directory_regenerates_the_files(tmp_path):
    # Each size leaves a stamp; going back to an earlier size must not trust its stale stamp
    # while the files hold the other size (shards past the end: "rows out of range").
    for rows in (4000, 2000, 4000):
        files = generate(tmp_path, rows=rows, files=2, vocab=50, row_group=512)
        assert list_files(str(tmp_path)) == files and sum(n for _, n in files) == rows


def test_unreadable_and_wrong_schema_files_are_named(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"garbage")
    with pytest.raises(DataError, match="x.parquet"):
        list_files(str(tmp_path / "x.parquet"))
    with pytest.raises(DataError, match="no such file"):
        list_files(str(tmp_path / "missing.parquet"))


def test_real_criteo_tsv_converts_with_blanks_and_hashing(tmp_path):
    line = "1\t" + "\t".join(["3", ""] * 6 + ["7"]) + "\t" + "\t".join(["a1b2", ""] * 13) + "\n"
    tsv = tmp_path / "day_0"
    tsv.write_text(line * 3)
    (path, n), = convert_criteo_tsv(tsv, tmp_path / "pq", vocab=100)
    b = read_rows(path, 0, n, vocab=100)
    assert n == 3 and b.label.tolist() == [1, 1, 1]
    assert b.cat[0, 0] == int("a1b2", 16) % 100 and b.cat[0, 1] == 0
    tsv.write_text("1\t2\n")
    with pytest.raises(DataError, match="day_0:1"):
        convert_criteo_tsv(tsv, tmp_path / "pq2")


def test_auc_of_perfect_random_and_tied_scores():
    y = np.array([0, 0, 1, 1])
    assert auc(y, np.array([0.1, 0.2, 0.8, 0.9])) == 1.0
    assert auc(y, np.array([0.5, 0.5, 0.5, 0.5])) == 0.5
    assert auc(y, np.array([0.9, 0.8, 0.2, 0.1])) == 0.0


def test_flash_checkpoint_persists_each_version_to_storage_and_loads_any_kept_one(tmp_path):
    ck = FlashCheckpointer("ps-x", Storage(tmp_path), keep=2)
    a = np.arange(10.0)
    ck.save({"w": a}, version=1)
    a[:] = 7.0  # the copy is taken at save time
    ck.save({"w": a}, version=2)
    assert ck.flush() == 2 and ck.persisted_version == 2
    again = FlashCheckpointer("ps-x", Storage(tmp_path))  # another process, another node
    assert (again.load()["w"] == 7.0).all() and (again.load(1)["w"] == np.arange(10.0)).all()
    ck.save({"w": a + 1}, version=3)
    ck.flush()
    assert again.versions() == [2, 3] and again.load(1) is None   # the oldest dropped
    assert not [p for p in (tmp_path / "ps-x").iterdir() if p.suffix == ".tmp"]


def test_dlrm_gradients_reach_only_the_rows_in_the_batch():
    spec = DLRMSpec(vocab=20, dim=4, bottom=(8,), top=(8,))
    model = DLRMDense(spec)
    rng = np.random.default_rng(0)
    cat = rng.integers(0, 20, size=(16, 26))
    rows = {t: (np.unique(cat[:, t]), init_table(spec, t)[np.unique(cat[:, t])]) for t in range(26)}
    loss, dg, sg = forward_backward(model, rng.random((16, 13), dtype=np.float32), cat,
                                    rng.integers(0, 2, 16).astype(np.float32), rows)
    assert loss > 0 and set(dg) == {n for n, _ in model.named_parameters()}
    assert all(sg[t].shape == rows[t][1].shape for t in range(26))


def test_an_adagrad_row_update_can_be_taken_back_leaving_later_ones():
    from raystack.elastic.dlrm import adagrad_rows, undo_adagrad_rows

    rng = np.random.default_rng(0)
    w, acc = rng.normal(size=(10, 4)), np.zeros((10, 4))
    w0 = w.copy()
    ids_a, g_a = np.array([1, 3]), rng.normal(size=(2, 4))
    ids_b, g_b = np.array([3, 5]), rng.normal(size=(2, 4))
    step_a = adagrad_rows(w, acc, ids_a, g_a, 0.1)
    step_b = adagrad_rows(w, acc, ids_b, g_b, 0.1)
    undo_adagrad_rows(w, acc, ids_a, g_a, step_a)
    # as if only b had been applied (with the step it took), and the accumulator without a's g^2
    expect = w0.copy()
    expect[ids_b] -= step_b
    np.testing.assert_allclose(w, expect, atol=1e-12)
    np.testing.assert_allclose(acc[[1]], 0.0, atol=1e-12)
    np.testing.assert_allclose(acc[[3, 5]], g_b * g_b, atol=1e-12)
