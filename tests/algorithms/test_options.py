"""Bad input is refused with a ValueError naming the option, the value and the fix."""

import re

import pytest

from neurorun.algorithms import ALGORITHMS, make_algorithm

from .conftest import FIXED_NOISE

NAMES = sorted(ALGORITHMS)
STDEV_NAMES = sorted(set(NAMES) - FIXED_NOISE)


@pytest.mark.parametrize("name", STDEV_NAMES)
def test_both_stdev_init_and_radius_init(name, build):
    with pytest.raises(ValueError, match=r"stdev_init=1.0 and radius_init=2.0.*exactly one.*Fix"):
        build(name, radius_init=2.0)


@pytest.mark.parametrize("name", STDEV_NAMES)
def test_neither_stdev_init_nor_radius_init(name, build):
    with pytest.raises(ValueError, match=r"stdev_init=None and radius_init=None.*Fix"):
        build(name, stdev_init=None)


@pytest.mark.parametrize("name", NAMES)
def test_bad_popsize_and_stdev(name, build):
    with pytest.raises(ValueError, match=r"popsize=0.*Fix"):
        build(name, popsize=0)
    with pytest.raises(ValueError, match=r"stdev_init=-1.0.*Fix"):
        build(name, stdev_init=-1.0)
    with pytest.raises(ValueError, match=r"center_init=<3 values>: expected one value, or \d+ "):
        build(name, center_init=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"objective_sense='maximize'.*Fix"):
        build(name, objective_sense="maximize")


def test_odd_popsize_with_symmetric_pgpe(build):
    with pytest.raises(ValueError, match=r"popsize=7 with symmetric=true.*even.*Fix"):
        build("pgpe", popsize=7)
    assert build("pgpe", popsize=7, symmetric=False).ask().shape == (7, 5)
    with pytest.raises(ValueError, match=r"samples 0..2 with mirrored sampling.*even popsize.*Fix"):
        build("pgpe").ask(3)


@pytest.mark.parametrize("ratio", [0.0, 1.0, 1.5, -0.1, None])
def test_parenthood_ratio_outside_unit_interval(ratio, build):
    with pytest.raises(ValueError, match=rf"parenthood_ratio={ratio}.*\(0, 1\).*Fix"):
        build("cem", parenthood_ratio=ratio)


def test_too_few_parents(build):
    with pytest.raises(ValueError, match=r"parenthood_ratio=0.1 with popsize=10.*Fix"):
        build("cem", parenthood_ratio=0.1)


@pytest.mark.parametrize(
    ("name", "option", "value"),
    [("pgpe", "center_learning_rate", 0.0), ("pgpe", "stdev_learning_rate", -0.1),
     ("pgpe", "center_learning_rate", None), ("snes", "center_learning_rate", 0.0),
     ("snes", "stdev_learning_rate", -1.0), ("xnes", "center_learning_rate", -2.0)],
)
def test_non_positive_learning_rates(name, option, value, build):
    with pytest.raises(ValueError, match=rf"{option}={value}; expected a finite number > 0.*Fix"):
        build(name, **{option: value})


@pytest.mark.parametrize(
    ("options", "message"),
    [({"stdev_max_change": 1.5}, r"stdev_max_change=1.5.*\(0, 1\)"),
     ({"stdev_min": 2.0, "stdev_max": 1.0}, r"stdev_min=2.0 exceeds stdev_max=1.0"),
     ({"ranking_method": "best"}, r"ranking_method='best'"),
     ({"optimizer": "lion"}, r"optimizer='lion'"),
     ({"num_interactions": 0}, r"num_interactions=0")],
)
def test_bad_step_options(options, message, build):
    with pytest.raises(ValueError, match=message + ".*Fix"):
        build("pgpe", **options)


@pytest.mark.parametrize("name, extra", [("snes", {}), ("xnes", {}),
                                         ("pgpe", {"symmetric": False})])
def test_popsize_one_that_cannot_move_the_center_is_refused(name, extra):
    options = {"stdev_init": 1.0, "center_learning_rate": 0.1, "stdev_learning_rate": 0.1,
               **extra} if name == "pgpe" else {"stdev_init": 1.0}
    with pytest.raises(ValueError, match="popsize=1 .*center would never move"):
        make_algorithm(name, solution_length=4, popsize=1, **options)
    # raw fitness does move a single sample's center: allowed
    make_algorithm(name, solution_length=4, popsize=1, ranking_method="raw", **options)


# a stdev bound or start that is not a usable stdev (finite, > 0, its
# square finite in float32) is refused when the algorithm is built, naming the option; stdev_max
# -5 ran with a negative stdev, 0 stopped the search silently, 1e308 diverged in generation 1
@pytest.mark.parametrize(("name", "options", "named"), [
    ("pgpe", {"stdev_max": -5.0}, "stdev_max=-5.0"),
    ("pgpe", {"stdev_max": 0.0}, "stdev_max=0.0"),
    ("pgpe", {"stdev_min": -1.0}, "stdev_min=-1.0"),
    ("snes", {"stdev_min": 0.0}, "stdev_min=0.0"),
    ("pgpe", {"stdev_max": [1.0, 1.0, -1.0, 1.0, 1.0]}, "stdev_max=[1.0, 1.0, -1.0, 1.0, 1.0]"),
    ("pgpe", {"stdev_min": float("inf")}, "stdev_min=inf"),
    ("pgpe", {"stdev_min": 1e308}, "stdev_min=1e+308"),
    ("pgpe", {"stdev_init": None, "radius_init": 1e308}, "radius_init=1e+308"),
    ("snes", {"stdev_init": 1e20}, "stdev_init=1e+20"),
    ("cmaes", {"stdev_init": float("inf")}, "stdev_init=inf"),
    ("ars", {"noise": 1e308}, "noise=1e+308"),
])
def test_stdev_bounds_and_starts_must_be_usable_stdevs(name, options, named, build):
    with pytest.raises(ValueError, match=re.escape(named) + r"; expected a finite number > 0 "
                                                            r"and at most 1e\+18.*Fix"):
        build(name, **options)


# a center_init that is not finite in float32, or so large that a
# weight times an observation overflows, is refused (it was accepted: nan or inf weights)
@pytest.mark.parametrize("name", ["pgpe", "cmaes", "xnes"])
@pytest.mark.parametrize(("value", "shown"), [(float("nan"), "nan"), (1e308, "1e+308"),
                                              ([0.0, 0.0, -1e20, 0.0, 0.0], "-1e+20")])
def test_a_center_init_out_of_range_is_refused(name, value, shown, build):
    with pytest.raises(ValueError, match=rf"center_init=.*{re.escape(shown)}.*; expected finite "
                                         r"numbers within \+-1e\+18.*Fix"):
        build(name, center_init=value)


# a noise_table_size that no table can have is refused whatever the source
# (with noise_source=seeds, 0 and -5 were accepted silently)
@pytest.mark.parametrize("size", [0, -5])
def test_a_noise_table_size_below_one_is_refused_with_seeded_noise(size, build):
    with pytest.raises(ValueError, match=rf"noise_table_size={size}; expected an integer >= 1"):
        build("pgpe", noise_source="seeds", noise_table_size=size)


@pytest.mark.parametrize("key", ["center_init", "stdev_init"])
def test_an_empty_list_is_no_value_for_each_parameter(build, key):
    with pytest.raises(ValueError, match=rf"{key}=\[\]: expected a number or a list of numbers"):
        build("pgpe", center_learning_rate=0.1, stdev_learning_rate=0.1, **{key: []})


def test_a_radius_whose_stdev_rounds_to_zero_is_refused(build):
    """radius / sqrt(D) is the stdev: 2e-45 / sqrt(16) is 0 in float32."""
    with pytest.raises(ValueError, match=r"radius_init=2e-45; expected a finite number > 0"):
        build("snes", solution_length=16, stdev_init=None, radius_init=2e-45)
