"""The rule planner on requests about a table's rows (the twelfth round, requests of the
developer's own wording, none from a set): tables stacked one after the other ("stack them",
"append feb.csv to jan.csv"), which were joined on a key or refused; a file after another file
and "to" / "onto" / "into" is the other side of a join or concat ("join customers.csv to
orders.csv" was refused). Each was refused or
planned wrong before; the plans are run on real files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from raystack.workflow.table_steps import concat

from planner_util import kinds as _kinds, of_kind, plan as _plan, refs as _refs


@pytest.fixture()
def months(tmp_path, monkeypatch):
    """jan.csv (2 rows) and feb.csv (3 rows, one a copy of a January row), in the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jan.csv").write_text("day,sales\n1,10\n2,12\n")
    (tmp_path / "feb.csv").write_text("day,sales\n1,10\n3,7\n4,9\n")
    return tmp_path


def _stacked(p) -> tuple[str, str]:
    c = of_kind(p, "concat")[0]
    paths = {s.id: s.params["path"] for s in of_kind(p, "load_data")}
    return paths[_refs(c.params["first"])[0]], paths[_refs(c.params["second"])[0]]


def test_tables_stacked_or_appended_are_a_concat_not_a_join(months):
    """'load jan.csv and feb.csv, concatenate them' was a join on their shared column: silently
    wrong (a join pairs January's day 1 with February's day 1). 'stack them' and 'union a.csv
    and b.csv' were refused. Each is a concat of the two tables, the one appended to first; run,
    it keeps every row of both, in that order."""
    from raystack.workflow.engine import run_local
    cases = {
        "Load jan.csv and feb.csv, concatenate them and compute stats.": ("jan.csv", "feb.csv"),
        "Load jan.csv and feb.csv and stack them, then dedup.": ("jan.csv", "feb.csv"),
        "Union jan.csv and feb.csv and write the result to out/all.parquet.": ("jan.csv", "feb.csv"),
        "Append feb.csv to jan.csv, then compute stats.": ("jan.csv", "feb.csv"),
        "Append jan.csv onto feb.csv and write it to out/all.csv.": ("feb.csv", "jan.csv"),
        "Join customers.csv to orders.csv on id, then compute stats.": None,     # a file after "to" is a side
    }
    for text, want in cases.items():
        p = _plan(text)
        if want is None:
            assert _kinds(p) == ["load_data", "load_data", "join", "stats"], text
            continue
        assert "join" not in _kinds(p), text
        assert _stacked(p) == want, text
    p = _plan("Load jan.csv and feb.csv, stack them, remove duplicates, and write it to out/all.csv.")
    assert _kinds(p) == ["load_data", "load_data", "concat", "dedup", "write_table"]
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    stacked = rep.results[of_kind(p, "concat")[0].id].load(None)
    assert stacked.column("day").to_pylist() == [1, 2, 1, 3, 4]          # every row, January's first
    assert rep.results[of_kind(p, "dedup")[0].id].load(None).num_rows == 4


def test_concat_matches_columns_by_name_and_refuses_tables_whose_columns_differ():
    a = pa.table({"day": [1, 2], "sales": [1.5, 2.5]})
    b = pa.table({"sales": [3, 4], "day": [3, 4]})                       # other order, integer sales
    out = concat(a, b)
    assert out.column_names == ["day", "sales"]
    assert out.to_pydict() == {"day": [1, 2, 3, 4], "sales": [1.5, 2.5, 3.0, 4.0]}
    with pytest.raises(ValueError, match=r"only in the first: \['sales'\].*only in the second: \['region'\]"):
        concat(a, pa.table({"day": [1], "region": ["n"]}))
