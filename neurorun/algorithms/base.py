"""The ask/tell interface every algorithm shares, and its one seam: weighted noise sums.

A generation is ``ask()`` (any number of times: adaptive popsize adds samples from the same
distribution), then one ``tell(fitness)`` with the fitness of every pending sample, in order.
Every sample is ``center + T(eps)`` for a row ``eps`` of the generation's noise
(:mod:`neurorun.algorithms.noise`), and every update reads the noise only through weighted
sums of it:

    tell(fitness) = update(weighted_sums(noise, weights(fitness)), weights, fitness)

``weights`` is the algorithm's rule over the *whole* generation (ranks, utilities, elites,
top directions, recombination weights); the sums add up over any split of the population.
A distributed run (``neurorun.parallel``) makes that split: actors regenerate their shares'
noise, evaluate it and send fitness; the main process computes the weights of the whole
generation and sends each actor its slice; the actors send back their sums; the main process
adds them and updates: the local run's update, to float summation order.

Subclasses set ``SUMS`` (which sums each weight vector needs) and implement ``samples``,
``weights``, ``update``, ``center``, ``stdev``, ``sampling_state``, and `Recorded`'s
``_state`` and ``_load_state`` (record.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

import torch

from neurorun.algorithms.divergence import require_finite
from neurorun.algorithms.fitness import check_fitness, population_stats
from neurorun.algorithms.noise import check_noise, make_noise, sample_noise, weighted_sums
from neurorun.algorithms.options import options_from_flat, require_count
from neurorun.algorithms.record import Recorded
from neurorun.common.sense import check_sense, maximized

Weights = dict[str, torch.Tensor]  # name -> (P,) weights of the generation's samples
Sums = dict[str, torch.Tensor]  # "name.kind" -> sum (see noise.weighted_sums)


class SearchAlgorithm(Recorded):
    """Public ask/tell/state_dict (`Recorded`); each subclass file holds its whole update."""

    name: ClassVar[str]
    title: ClassVar[str]  # its name in prose (README's list of algorithms)
    Options: ClassVar[type]  # the dataclass of this algorithm's options
    DEFAULTS: ClassVar[dict[str, Any]] = {}  # algorithm-specific option defaults
    SUMS: ClassVar[dict[str, tuple[str, ...]]] = {}  # weight vector -> sums its update reads
    NEEDS_NORMS: ClassVar[bool] = False  # weights read each sample's squared noise norm
    # the keys of its state (``_state``, at any depth) that are step sizes: a resumed state.pt
    # must hold them > 0 (record/state.py), not only finite
    POSITIVE: ClassVar[tuple[str, ...]] = ("sigma",)
    # its options that set the first step size: a small bipop attempt scales whichever is set
    # (loop/restarts.py)
    STEP_SIZES: ClassVar[tuple[str, ...]] = ("stdev_init", "radius_init")
    # its options that only set the popsize: a restart's attempt, which sets its own, drops them
    POPSIZE_OPTIONS: ClassVar[tuple[str, ...]] = ()
    mirrored: bool = False  # samples 2k and 2k+1 are center + T(eps_k) and center - T(eps_k)

    def __init__(self, solution_length: int, *, popsize: int | None = None,
                 seed: int | None = None, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32, objective_sense: str = "max",
                 **options: Any):
        require_count("solution_length", solution_length, allow_none=False)
        self.solution_length = solution_length
        self.objective_sense = check_sense(objective_sense)
        self.device = torch.device(device)
        self.dtype = dtype
        self.options = self.checked_options(popsize, options)
        self.popsize = popsize
        if popsize is None:  # the default may follow D: its rules are checked now
            self.popsize = self.default_popsize(self.options, solution_length)
            self.check(self.options, self.popsize)
        self.generator = torch.Generator()
        if seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(int(seed))
        sampling = self.options.sampling
        self.noise = make_noise(sampling.noise_source, table_size=sampling.noise_table_size,
                                seed=int(torch.randint(2**62, (), generator=self.generator)),
                                dim=solution_length, popsize=self.popsize)
        self.generation = 0
        self._draw = 0  # the noise draw of the current generation
        self._pending: list[torch.Tensor] = []  # noise of the samples asked this generation
        self.said_capped = False  # that adaptive generations end at samples_max (said once)
        self._last: dict[str, float] = {}

    # -- the options' check: all of it that needs no solution length ----------------------
    @classmethod
    def checked_options(cls, popsize: int | None, options: Mapping[str, Any]) -> Any:
        """The flat keyword ``options`` as this algorithm's ``Options``, checked: names, types,
        and every rule on them and ``popsize`` (None: it follows D, checked once known) that
        needs no solution length. A run checks ``algo.*`` by it before any env exists; what is
        left to the constructor needs D (a per-parameter list's length, a noise table's size).

        Raises:
            ValueError: naming the option, its value and the fix.
        """
        checked = options_from_flat(cls.Options, {**cls.DEFAULTS, **options})
        cls.check(checked, cls.default_popsize(checked, None) if popsize is None else popsize)
        return checked

    @classmethod
    def check(cls, options: Any, popsize: int | None) -> None:
        """Raise a ValueError for ``options`` (or a ``popsize``) this algorithm refuses;
        subclasses add their own rules to these."""
        require_count("popsize", popsize)
        adaptive = options.adaptive
        require_count("num_interactions", adaptive.num_interactions)
        require_count("popsize_max", adaptive.popsize_max)
        if popsize is not None and adaptive.popsize_max is not None \
                and adaptive.popsize_max < popsize:
            raise ValueError(f"popsize_max={adaptive.popsize_max} is below popsize={popsize}, "
                             "which a generation takes at least. Fix: popsize_max="
                             f"{popsize} or more, or null")
        check_noise(options.sampling.noise_source, options.sampling.noise_table_size)

    # -- what subclasses provide ------------------------------------------------------
    @classmethod
    def default_popsize(cls, options: Any, solution_length: int | None) -> int | None:
        """The popsize a ``popsize=None`` means (None: it follows a solution length not known
        yet); by default there is none."""
        raise ValueError(
            f"popsize=None for {cls.name}; expected an integer >= 1 ({cls.name} has no default "
            "population size). Fix: set popsize."
        )

    @property
    def center(self) -> torch.Tensor:
        raise NotImplementedError

    @property
    def stdev(self) -> torch.Tensor:
        raise NotImplementedError

    def samples(self, noise: torch.Tensor) -> torch.Tensor:
        """The solutions ``(n, D)`` of noise rows ``(n, D)``."""
        raise NotImplementedError

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        """The generation's weights (higher fitness is better); ``norms``: each sample's
        squared noise norm, where ``NEEDS_NORMS``."""
        raise NotImplementedError

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        """The whole update from the generation's weighted noise sums."""
        raise NotImplementedError

    def sampling_state(self) -> dict[str, torch.Tensor]:
        """What ``samples`` reads (a distributed actor loads it every generation)."""
        raise NotImplementedError

    def load_sampling_state(self, state: Mapping[str, torch.Tensor]) -> None:
        for key, value in state.items():
            setattr(self, key, value.to(self.device))

    # -- ask / tell ---------------------------------------------------------------------
    @property
    def asked(self) -> int:
        """Samples asked since the last tell."""
        return sum(len(p) for p in self._pending)

    def begin_generation(self) -> int:
        """The noise draw of a new generation (ask does this at its first call)."""
        self._draw = int(torch.randint(2**62, (), generator=self.generator))
        self._pending = []
        return self._draw

    def noise_rows(self, draw: int, first: int, count: int) -> torch.Tensor:
        """Noise of samples ``first .. first + count - 1`` of generation ``draw``."""
        return sample_noise(self.noise, draw, first, count, self.solution_length,
                            mirrored=self.mirrored, device=self.device, dtype=self.dtype)

    def ask(self, n: int | None = None) -> torch.Tensor:
        """Sample ``n`` (default: popsize) more solutions of the current generation, (n, D)."""
        n = self.popsize if n is None else n
        require_count("n", n, allow_none=False)
        if not self._pending:
            self.begin_generation()
        noise = self.noise_rows(self._draw, self.asked, n)
        self._pending.append(noise)
        return self.samples(noise)

    def tell(self, fitness: torch.Tensor | Any) -> dict[str, float]:
        """Update the search from the fitness of all solutions asked since the last tell."""
        if not self._pending:
            raise ValueError("tell() called with no pending samples. Fix: call ask() first.")
        noise = self._pending[0] if len(self._pending) == 1 else torch.cat(self._pending)
        norms = noise.square().sum(1) if self.NEEDS_NORMS else None
        weights, shaped = self.generation_weights(fitness, norms, len(noise))
        self._pending = []  # only once the fitness was accepted
        sums = weighted_sums(noise, weights, self.SUMS, mirrored=self.mirrored)
        return self.conclude(sums, weights, shaped, fitness)

    def generation_weights(self, fitness: Any, norms: torch.Tensor | None,
                           count: int) -> tuple[Weights, torch.Tensor]:
        """``(weights, fitness as maximized)`` of a whole generation of ``count`` samples."""
        fitness = check_fitness(fitness, count, self.device, self.dtype)
        shaped = maximized(self.objective_sense, fitness)
        if norms is not None:
            norms = torch.as_tensor(norms, device=self.device, dtype=self.dtype)
        return self.weights(shaped, norms), shaped

    def conclude(self, sums: Sums, weights: Weights, shaped: torch.Tensor,
                 fitness: Any) -> dict[str, float]:
        """Apply the update from the generation's (added-up) sums; the generation ends."""
        self.update({k: v.to(self.device, self.dtype) for k, v in sums.items()}, weights, shaped)
        require_finite(self)
        self.generation += 1
        self._last = population_stats(torch.as_tensor(fitness, dtype=self.dtype).reshape(-1),
                                      self.objective_sense)
        return self.status

    @property
    def status(self) -> dict[str, float]:
        """Generation, popsize, stdev_mean and the last population's fitness summary."""
        return {
            "generation": self.generation,
            "popsize": int(self._last.get("popsize", self.popsize)),
            "stdev_mean": float(self.stdev.mean()),
            **{k: v for k, v in self._last.items() if k != "popsize"},
        }

    # -- distributed mode -----------------------------------------------------------------
    distributable: ClassVar[bool] = True  # full CMA-ES is refused (see neurorun.parallel)

    def replica(self) -> SearchAlgorithm:
        """A copy for a distributed actor, which only samples and sums: the noise source and
        the sampling code, without optimizer state or pending samples."""
        replica = copy.copy(self)
        replica.optimizer = None
        replica._pending = []
        return replica
