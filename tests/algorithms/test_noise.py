"""The noise of a generation's samples: a function of (draw, sample index), on both sources."""

import numpy as np
import pytest
import torch

from neurorun.algorithms.noise import (
    NoiseTable,
    SeededNoise,
    make_noise,
    row_seeds,
    sample_noise,
    weighted_sums,
)

CPU = {"device": torch.device("cpu"), "dtype": torch.float32}
SOURCES = [SeededNoise(), NoiseTable(seed=3, size=1 << 16)]


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_rows_depend_on_draw_and_index_only(source):
    whole = sample_noise(source, 7, 0, 10, 5, mirrored=False, **CPU)
    parts = [sample_noise(source, 7, first, count, 5, mirrored=False, **CPU)
             for first, count in ((0, 3), (3, 4), (7, 3))]
    assert torch.equal(torch.cat(parts), whole)
    assert not torch.equal(sample_noise(source, 8, 0, 10, 5, mirrored=False, **CPU), whole)
    assert len({tuple(row) for row in whole.tolist()}) == 10


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_mirrored_samples_share_their_pair_row_with_opposite_signs(source):
    noise = sample_noise(source, 1, 4, 6, 3, mirrored=True, **CPU)
    assert torch.equal(noise[0::2], -noise[1::2])
    # samples 4..9 are pairs 2..4: rows 2..4, which unmirrored samples 2..4 get as they are
    pair_rows = sample_noise(source, 1, 2, 3, 3, mirrored=False, **CPU)
    assert torch.equal(noise[0::2], pair_rows)


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_rows_are_standard_normal_and_uncorrelated(source):
    noise = sample_noise(source, 11, 0, 4000, 8, mirrored=False, **CPU).double().numpy()
    assert abs(noise.mean()) < 0.02 and abs(noise.std() - 1) < 0.02
    between_rows = np.corrcoef(noise[:-1].ravel(), noise[1:].ravel())[0, 1]
    assert abs(between_rows) < 0.03


def test_table_rows_are_windows_of_the_table_at_offsets_from_the_seeds():
    table = NoiseTable(seed=0, size=1000)
    rows = sample_noise(table, 5, 0, 2, 10, mirrored=False, **CPU)
    offsets = row_seeds(5, np.array([0, 1])) % (1000 - 10 + 1)
    for row, offset in zip(rows, offsets, strict=True):
        assert torch.equal(row, table.table[offset:offset + 10])


def test_row_seeds_by_hand_are_splitmix_of_draw_and_index():
    def splitmix(draw, index):
        mask = (1 << 64) - 1
        z = (draw * 0x9E3779B97F4A7C15 + index * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return (z ^ (z >> 31)) & ((1 << 63) - 1)

    draw = 2**61 + 12345
    assert row_seeds(draw, np.array([0, 1, 999])).tolist() == [
        splitmix(draw, i) for i in (0, 1, 999)]


def test_weighted_sums_by_hand_and_over_a_split():
    generator = torch.Generator().manual_seed(0)
    noise = torch.randn(6, 3, generator=generator, dtype=torch.float64)
    w = torch.tensor([0.5, -1.0, 0.0, 2.0, 1.5, -0.25], dtype=torch.float64)
    kinds = {"w": ("eps", "eps2", "outer")}
    sums = weighted_sums(noise, {"w": w}, kinds)
    x, v = noise.numpy(), w.numpy()
    np.testing.assert_allclose(sums["w.eps"], v @ x)
    np.testing.assert_allclose(sums["w.eps2"], v @ x**2)
    np.testing.assert_allclose(sums["w.outer"], sum(vi * np.outer(xi, xi)
                                                   for vi, xi in zip(v, x, strict=True)))
    halves = [weighted_sums(noise[s], {"w": w[s]}, kinds) for s in (slice(0, 2), slice(2, 6))]
    for key in sums:
        torch.testing.assert_close(halves[0][key] + halves[1][key], sums[key])


def test_mirrored_weighted_sums_read_each_pair_once_and_equal_the_sums_by_hand():
    generator = torch.Generator().manual_seed(1)
    pairs = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    noise = torch.stack([pairs, -pairs], 1).reshape(6, 4)  # +eps_k, -eps_k
    w = torch.tensor([0.5, -1.0, 0.0, 2.0, 1.5, -0.25], dtype=torch.float64)
    kinds = {"w": ("eps", "eps2", "outer")}
    sums = weighted_sums(noise, {"w": w}, kinds, mirrored=True)
    x, v = noise.numpy(), w.numpy()
    np.testing.assert_allclose(sums["w.eps"], v @ x)
    np.testing.assert_allclose(sums["w.eps2"], v @ x**2)
    np.testing.assert_allclose(sums["w.outer"], sum(vi * np.outer(xi, xi)
                                                   for vi, xi in zip(v, x, strict=True)))
    # a split at a pair boundary adds up
    halves = [weighted_sums(noise[s], {"w": w[s]}, kinds, mirrored=True)
              for s in (slice(0, 2), slice(2, 6))]
    for key in sums:
        torch.testing.assert_close(halves[0][key] + halves[1][key], sums[key])


def test_a_table_smaller_than_a_row_is_refused():
    with pytest.raises(ValueError, match=r"noise_table_size=10.*solution length 20.*Fix"):
        make_noise("table", seed=0, table_size=10, dim=20)
    assert make_noise("table", seed=0, table_size=None, dim=20).size == 1 << 24


def test_a_table_with_fewer_windows_than_the_popsize_is_refused():
    """A table of D numbers holds one window: every row would be the same noise."""
    table = make_noise("table", seed=0, table_size=20, dim=20)  # popsize 1: one window will do
    rows = torch.empty(3, 20)
    table.fill(0, np.arange(3), rows)
    assert torch.equal(rows[0], rows[1]) and torch.equal(rows[1], rows[2])
    with pytest.raises(ValueError, match=r"noise_table_size=20 holds 1 window\(s\) of the "
                                         r"solution length 20, fewer than the popsize 4.*Fix: "
                                         r"algo.noise_table_size >= 23"):
        make_noise("table", seed=0, table_size=20, dim=20, popsize=4)
    assert make_noise("table", seed=0, table_size=23, dim=20, popsize=4).size == 23


# noise_table_size=1e14 passed the checks, then torch failed to allocate
# 400 TB mid-run; a table the memory cannot hold is refused before it is made, with the largest
# size that fits
def test_a_table_the_memory_cannot_hold_is_refused_before_it_is_made(monkeypatch):
    from neurorun.algorithms import noise

    monkeypatch.setattr(noise, "device_free_bytes", lambda device: 10**9)  # 1 GB free
    monkeypatch.setattr(torch, "empty", lambda *a, **k: pytest.fail("the table was allocated"))
    with pytest.raises(ValueError, match=r"^noise_table_size=100000000000000: .*400,000\.0 GB"
                       r".*1\.0 GB free.*Fix: algo.noise_table_size=200000000 or less"):
        make_noise("table", seed=0, table_size=10**14, dim=20)
    make_noise("seeds", seed=0, table_size=10**14, dim=20)  # no table: nothing to hold


def test_the_config_check_refuses_a_table_the_memory_cannot_hold():
    from neurorun.cli.app import compose_config
    from neurorun.config import checks as config_checks

    cfg = compose_config(["debug=default", "algo.noise_source=table",
                          "algo.noise_table_size=100000000000000"])
    with pytest.raises(config_checks.ConfigError,
                       match=r"noise_table_size=100000000000000: .*Fix"):
        config_checks.validate_config(cfg)
