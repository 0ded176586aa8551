"""The policies side by side: each behaves as its definition says, the same every run.

Expected values come from the policies' definitions: K-sync cancels the
``n - K`` slowest every update and applies ``K`` fresh gradients; asynchronous
SGD applies every gradient and none is fresh once others have updated; TF's
backup workers (``num_tokens=0``) compute ``n`` gradients per update and
drop the late ones; waiting for all n takes longer than for the first K.
"""

import pytest

from minitf.examples import policies as example

pytestmark = pytest.mark.timeout(120)


def test_the_policies_table_follows_each_definition_and_repeats_from_a_seed(tmp_path, capsys):
    argv = ["--workers", "4", "--k", "2", "--steps", "15", "--out", str(tmp_path)]
    first = {r["policy"]: r for r in example.main(argv)}
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(example.POLICIES)
    assert "formula" in lines[0] and lines[0].strip().startswith("FullySync")
    k_sync = first["KSync"]
    assert k_sync["applied"] == 2 * 15 and k_sync["dropped"] == 0
    assert k_sync["cancelled"] >= 2 * 14  # the two slowest of four, every update but the last
    assert first["FullySync"]["cancelled"] == 0 and first["FullySync"]["staleness"] == 0
    assert first["Async"]["staleness"] > 0 and first["Async"]["dropped"] == 0
    assert first["TF backups"]["dropped"] > 0 and first["TF backups"]["cancelled"] == 0
    assert first["FullySync"]["time_per_update"] > first["KSync"]["time_per_update"]
    assert (tmp_path / "loss.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "KSync" / "loss.png").exists()
    again = {r["policy"]: r for r in example.main(argv[:-2])}
    assert again == first


def test_an_unknown_policy_is_named_with_the_choices(capsys):
    with pytest.raises(SystemExit):
        example.main(["--policies", "KSync,Gossip"])
    assert "unknown policy 'Gossip'; choose from FullySync" in capsys.readouterr().err


def test_k_async_with_more_than_half_of_the_workers_ends(capsys):
    # k = 6 of 8: the 2 left out of the last update push once more and are released.
    (result,) = example.main(["--policies", "KAsync", "--k", "6", "--steps", "5"])
    assert result["applied"] == 5 * 6 + (8 - 6) and result["dropped"] == 0
    assert capsys.readouterr().out.startswith("     KAsync:")
