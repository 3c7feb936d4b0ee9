"""Turning policy parameters into fitness: the population evaluator and its parts."""

from neurorun.problems.evaluator import EvaluationStats, Evaluator
from neurorun.problems.export import EnvPolicy
from neurorun.problems.from_config import make_problem
from neurorun.problems.options import AliveBonus, EnvOptions, RolloutOptions
from neurorun.problems.problem import EvaluationError, Problem
from neurorun.problems.returns import NONFINITE_FITNESS
from neurorun.problems.running_norm import RunningNorm

__all__ = ["NONFINITE_FITNESS", "AliveBonus", "EnvOptions", "EnvPolicy", "EvaluationError",
           "EvaluationStats", "Evaluator", "Problem", "RolloutOptions", "RunningNorm",
           "make_problem"]
