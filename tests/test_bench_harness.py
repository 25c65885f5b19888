"""benchmarks/harness.py: the shared pieces of the benchmark scripts."""

from __future__ import annotations

import json
import sys

from benchmarks.harness import Bench, process, table, timed, write_json


def test_process_times_a_child_and_reports_its_own_peak_memory():
    big = [sys.executable, "-c", "b = bytearray(150 * 2**20); print('ok')"]
    small = [sys.executable, "-c", "print('ok')"]
    r_big, r_small = process(big, repeat=2), process(small)
    assert r_big["rc"] == 0 and r_big["stdout"].strip() == "ok" and r_big["runs"] == 2
    assert r_big["wall_min_s"] <= r_big["wall_s"]
    assert r_big["peak_rss_mb"] > 150 > r_small["peak_rss_mb"]  # each child's own peak, not the largest so far


def test_process_stops_on_a_failing_command():
    import pytest

    with pytest.raises(SystemExit, match="exit 3"):
        process([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert process([sys.executable, "-c", "import sys; sys.exit(3)"], check=False)["rc"] == 3


def test_timed_returns_the_result_and_the_median_call():
    calls = []
    out, t = timed(lambda: calls.append(1) or len(calls), repeat=3)
    assert out == 3 and len(calls) == 3 and t["runs"] == 3 and 0 <= t["wall_min_s"] <= t["wall_s"]


def test_table_is_markdown_with_formats_and_missing_cells():
    rows = [{"tool": "bimine", "rate": 12345.6}, {"tool": "peer"}]
    assert table(rows, ["tool", "rate"], formats={"rate": ",.0f"}).splitlines() == [
        "| tool | rate |", "|---|---|", "| bimine | 12,346 |", "| peer | - |"]


def test_bench_saves_machine_command_and_rows(tmp_path):
    b = Bench("demo", "A demo.\n\nMore.")
    b.arg("--n", type=int, default=1)
    args = b.parse(["--n", "2", "--json", str(tmp_path / "r.json")])
    b.rows.append({"n": args.n})
    b.save()
    got = json.loads((tmp_path / "r.json").read_text())
    assert got["benchmark"] == "demo" and got["rows"] == [{"n": 2}]
    assert got["command"].startswith("python -m benchmarks.demo --n 2 --json ")
    assert got["machine"]["cores"] >= 1 and "cpu" in got["machine"]


def test_write_json_leaves_no_temporary(tmp_path):
    write_json(str(tmp_path / "a" / "x.json"), {"a": 1})
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["x.json"]
