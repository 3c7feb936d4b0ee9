"""RunningNorm against numpy: masked updates, merging, deltas, state."""

import numpy as np
import pytest
import torch

from neurorun.common.saved_values import SavedValueError
from neurorun.problems import RunningNorm
from neurorun.problems.running_norm import MIN_VARIANCE


def data(seed, rows=40, size=3):
    return np.random.default_rng(seed).normal(2.0, 3.0, size=(rows, size))


def test_statistics_equal_numpy_over_the_masked_rows():
    x = data(0)
    mask = np.random.default_rng(1).random(40) < 0.6
    norm = RunningNorm(3)
    norm.update(torch.tensor(x, dtype=torch.float32), torch.from_numpy(mask))
    kept = x[mask].astype(np.float32).astype(np.float64)
    assert float(norm.count) == mask.sum()
    np.testing.assert_allclose(norm.mean.numpy(), kept.mean(0), rtol=1e-12)
    np.testing.assert_allclose(norm.stdev.numpy(), kept.std(0), rtol=1e-9)
    np.testing.assert_allclose(norm.sum_of_squares.numpy(), (kept**2).sum(0), rtol=1e-12)


def test_merged_norms_equal_one_fed_all_the_data():
    a, b, both = RunningNorm(3), RunningNorm(3), RunningNorm(3)
    a.update(torch.from_numpy(data(2)))
    b.update(torch.from_numpy(data(3, rows=7)))
    both.update(torch.from_numpy(np.concatenate([data(2), data(3, rows=7)])))
    a.update(b)
    for name in ("count", "sum", "sum_of_squares", "mean", "stdev"):
        torch.testing.assert_close(getattr(a, name), getattr(both, name))


def test_delta_since_a_copy_is_the_new_data():
    norm = RunningNorm(3)
    norm.update(torch.from_numpy(data(4)))
    before = norm.copy()
    norm.update(torch.from_numpy(data(5, rows=9)))
    delta = norm - before
    fresh = RunningNorm(3)
    fresh.update(torch.from_numpy(data(5, rows=9)))
    torch.testing.assert_close(delta.sum, fresh.sum)
    assert float(delta.count) == 9


def test_variance_floor_and_empty_stats():
    norm = RunningNorm(2)
    x = torch.tensor([[1.0, 5.0], [1.0, 7.0]])
    torch.testing.assert_close(norm.normalize(x), x)  # empty: identity
    norm.update(x)
    assert norm.stdev.tolist() == pytest.approx([0.1, 1.0])  # variance 0 floored at 1e-2
    expected = (x - torch.tensor([1.0, 6.0])) / torch.tensor([0.1, 1.0])
    torch.testing.assert_close(norm.normalize(x), expected)
    exported = norm.export()
    assert exported["obs_count"] == 2.0 and exported["obs_sum"].tolist() == [2.0, 12.0]
    assert exported["obs_mean"].dtype == torch.float32


def constant_and_small_features(batches=50, rows=1000):
    """Rows of a wide feature, a narrow one (stdev 0.02: under the default floor's 0.1) and a
    constant one (a body's mass, as Humanoid observes it), fed in batches."""
    generator = np.random.default_rng(7)
    for _ in range(batches):
        x = np.empty((rows, 3), dtype=np.float32)
        x[:, 0] = generator.normal(2.0, 3.0, rows)
        x[:, 1] = generator.normal(-0.4, 0.02, rows)
        x[:, 2] = 8.907462
        yield torch.from_numpy(x)


def test_without_a_floor_each_feature_is_divided_by_its_own_stdev_and_a_constant_is_ignored():
    """ARS's normalization: no floor; a feature whose variance is the sums' rounding is 0."""
    norm, floored = RunningNorm(3, min_variance=0.0), RunningNorm(3)
    for batch in constant_and_small_features():
        norm.update(batch)
        floored.update(batch)
    x = torch.cat(list(constant_and_small_features())).double().numpy()
    rounding = float(norm.sum_of_squares[2] / norm.count - norm.mean[2] ** 2)
    assert rounding != 0.0  # the sums do not give the constant a variance of exactly 0
    np.testing.assert_allclose(norm.stdev.numpy(), [x[:, 0].std(), x[:, 1].std(), 0.0],
                               rtol=1e-6)
    np.testing.assert_allclose(floored.stdev.numpy()[1:], [MIN_VARIANCE**0.5] * 2, rtol=1e-12)
    rows = torch.from_numpy(x[:5]).float()
    expected = (x[:5, :2] - x[:, :2].mean(0)) / x[:, :2].std(0)
    normalized = norm.normalize(rows)
    np.testing.assert_allclose(normalized[:, :2].numpy(), expected, rtol=1e-4, atol=1e-5)
    assert normalized[:, 2].tolist() == [0.0] * 5  # multiplied by 0, as ARS does


def test_a_policys_statistics_keep_their_floor():
    norm = RunningNorm(3, min_variance=0.0)
    for batch in constant_and_small_features(batches=2):
        norm.update(batch)
    exported = norm.export()
    loaded = RunningNorm.from_export(exported)
    assert loaded.min_variance == 0.0
    torch.testing.assert_close(loaded.stdev, norm.stdev)
    older = {k: v for k, v in exported.items() if k != "obs_min_variance"}  # before the key
    assert RunningNorm.from_export(older).min_variance == MIN_VARIANCE
    for crafted in (-1.0, float("nan"), "0"):
        with pytest.raises(SavedValueError, match="obs_min_variance: expected a finite number"):
            RunningNorm.from_export({**exported, "obs_min_variance": crafted})


def test_state_dict_round_trip_and_size_checks():
    norm = RunningNorm(3)
    norm.update(torch.from_numpy(data(6)))
    loaded = RunningNorm.from_state_dict(norm.state_dict())
    torch.testing.assert_close(loaded.sum_of_squares, norm.sum_of_squares)
    with pytest.raises(ValueError, match="size 2"):
        RunningNorm(2).update(norm)


def test_an_update_leaves_the_callers_float64_rows_as_they_were():
    x = data(7)
    rows = torch.from_numpy(x.copy())
    norm = RunningNorm(3)
    norm.update(rows)
    np.testing.assert_array_equal(rows.numpy(), x)
    np.testing.assert_allclose(norm.sum_of_squares.numpy(), (x**2).sum(0), rtol=1e-12)


def test_a_scratch_update_adds_the_rows_it_overwrites():
    x = data(8)
    norm = RunningNorm(3)
    norm.update(torch.from_numpy(x.copy()), scratch=True)
    assert float(norm.count) == 40
    np.testing.assert_allclose(norm.sum.numpy(), x.sum(0), rtol=1e-12)
    np.testing.assert_allclose(norm.sum_of_squares.numpy(), (x**2).sum(0), rtol=1e-12)
