"""benchmarks/run_all.py: the table it prints from the benchmarks' JSON lines."""

import os

import pytest

from tests.benchmarks.conftest import BENCHMARKS, load_script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def run_all():
    yield from load_script("run_all")


def _line(table: str, workload: str) -> list[str]:
    (line,) = [row for row in table.splitlines() if row.startswith(f"| {workload} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_every_row_names_a_benchmark_that_exists(run_all):
    names = {b.name for b in run_all.BENCHMARKS}
    assert {row.bench for row in run_all.ROWS} <= names
    for bench in names:
        assert (BENCHMARKS / f"{bench}.py").exists()


def test_a_row_gives_the_range_over_runs_the_ratios_and_how_often_the_target_was_met(run_all):
    runs = {
        "local_overhead": [
            {"mlp_steps_per_s": 3000, "matmul_limit_steps_per_s": 3600, "tf_mlp_steps_per_s": 2400},
            {"mlp_steps_per_s": 2700, "matmul_limit_steps_per_s": 3600, "tf_mlp_steps_per_s": 2500},
        ]
    }
    cells = _line(run_all.table(runs), "MLP 784-128-10 SGD step, batch 64")
    assert cells[1] == "2,700–3,000 steps/s"
    assert cells[2] == "3,600 (its matrix products in numpy)"
    assert cells[3] == f"{2700 / 3600:.2f}×–{3000 / 3600:.2f}×"
    assert cells[4] == "2,400–2,500"
    assert cells[5] == f"{2700 / 2500:.2f}×–{3000 / 2400:.2f}×"
    # 3000 >= 1.2 * 2400 = 2880, but 2700 < 1.2 * 2500 = 3000.
    assert cells[6:] == ["≥ 1.2× TF", "1 of 2"]


def test_without_tensorflow_the_tf_cells_and_the_tf_target_are_left_empty(run_all):
    runs = {"local_overhead": [{"mlp_steps_per_s": 3000, "matmul_limit_steps_per_s": 3600}]}
    cells = _line(run_all.table(runs), "MLP 784-128-10 SGD step, batch 64")
    assert cells[4:6] == ["—", "—"]
    assert cells[7] == "—"


def test_rows_of_benchmarks_that_did_not_run_are_left_out(run_all):
    table = run_all.table({"dataflow": [{"aggregation_gb_per_s": 3.0, "numpy_add_gb_per_s": 5.0}]})
    assert len(table.splitlines()) == 3  # the header, its rule and the one row
    assert _line(table, "1 MB gradients from 4 producers into an accumulator")[-1] == "1 of 1"


def test_bad_options_are_refused_with_the_reason(run_all, capsys):
    with pytest.raises(SystemExit):
        run_all.parse_args(["--repeats", "0"])
    assert "--repeats must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_all.parse_args(["--tf-python", "/no/such/python"])
    assert "no such interpreter" in capsys.readouterr().err


def test_steal_is_the_share_of_all_ticks_between_two_readings_that_went_to_steal(run_all):
    # user nice system idle iowait irq softirq steal
    before = [100, 0, 50, 800, 10, 0, 5, 35]
    after = [400, 0, 150, 1300, 10, 0, 5, 135]
    # 1,000 ticks passed (300 + 100 + 500 + 100), 100 of them steal.
    assert run_all.steal_fraction(before, after) == pytest.approx(0.1)
    assert run_all.steal_fraction(before, before) == 0.0
    assert run_all.steal_fraction(None, after) is None


def test_the_steal_line_gives_each_benchmarks_range_in_percent(run_all):
    line = run_all.steal_line({"dataflow": [0.001, 0.042], "transport": [0.0]})
    assert "dataflow 0.1–4.2 %" in line
    assert "transport 0.0 %" in line
    assert run_all.steal_line({}) == ""


def test_cpu_ticks_reads_eight_counters_where_proc_stat_exists(run_all):
    ticks = run_all.cpu_ticks()
    if not os.path.exists("/proc/stat"):
        assert ticks is None
        return
    assert len(ticks) == 8 and all(isinstance(t, int) and t >= 0 for t in ticks)
    later = run_all.cpu_ticks()
    assert sum(later) >= sum(ticks)
