"""The backup-worker sweep on a simulated cluster: the shape of Chen et al.'s trade-off, every run.

With more backup workers each update waits for fewer gradients, so it comes
sooner (the k-th smallest of n delays shrinks as k does), and more gradients
arrive after their update was taken and are dropped.
"""

import numpy as np
import pytest

from minitf.examples import backup_workers

pytestmark = pytest.mark.timeout(120)


def test_more_backups_give_faster_updates_and_more_dropped_gradients_the_same_every_run(
    tmp_path,
):
    argv = ["--workers", "6", "--backups", "0,2,4", "--steps", "12", "--out", str(tmp_path)]
    first = backup_workers.main(argv)
    times = [r["time_per_update"] for r in first]
    dropped = [r["dropped_fraction"] for r in first]
    assert times[0] > times[1] > times[2]
    assert dropped[0] < dropped[1] < dropped[2]
    assert (tmp_path / "tradeoff.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "backups_2" / "report.json").exists()
    for result in first:
        assert result["predicted"] == backup_workers.predicted_time_per_update(6, result["backups"])
    assert backup_workers.main(argv[:-2]) == first  # the same seed, the same numbers


def test_the_prediction_is_the_mean_of_the_kth_fastest_of_n_shifted_exponential_times():
    # By hand: 4 workers, 1 backup: shift + mean * (1/4 + 1/3 + 1/2).
    assert backup_workers.predicted_time_per_update(4, 1) == pytest.approx(0.1 + 0.1 * 13 / 12)
    # Against samples: the 17th smallest of 20 draws of 0.1 + Exponential(0.1).
    rng = np.random.default_rng(0)
    draws = 0.1 + rng.exponential(0.1, size=(100_000, 20))
    kth = np.sort(draws, axis=1)[:, 20 - 3 - 1]
    bound = 4 * kth.std() / np.sqrt(len(kth))
    assert abs(kth.mean() - backup_workers.predicted_time_per_update(20, 3)) < bound


def test_backup_counts_are_given_as_a_list_or_a_range():
    assert backup_workers.parse_backups("0,1,2,4,8") == [0, 1, 2, 4, 8]
    assert backup_workers.parse_backups("0-3,8") == [0, 1, 2, 3, 8]
    assert backup_workers.parse_backups("0-20") == list(range(21))


def test_runs_in_processes_give_the_same_numbers_as_here():
    argv = ["--workers", "4", "--backups", "0-1", "--steps", "4"]
    assert backup_workers.main([*argv, "--jobs", "2"]) == backup_workers.main(argv)
