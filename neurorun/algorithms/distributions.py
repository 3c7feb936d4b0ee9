"""Gaussian search distributions and their search gradients.

Each distribution samples solutions, estimates the gradient of its parameters from
(samples, shaped fitness) and applies an update:

- `SeparableGaussian` (PGPE, CEM): mu and a per-coordinate sigma, plain gradient steps
  (Sehnke et al. 2010).
- `SymmetricSeparableGaussian` (PGPE default): mirrored pairs mu + e, mu - e.
- `ExpSeparableGaussian` (SNES): sigma updated multiplicatively, sigma *= exp(lr/2 * g)
  (Schaul et al. 2011).
- `ExpGaussian` (XNES): full A with cov = A A^T, A <- A expm(lr/2 * G_M)
  (Glasmachers et al. 2010).

Gradients are ascent directions: weights are shaped fitness where higher is better.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Step = Callable[[torch.Tensor], torch.Tensor]  # gradient -> step (optimizer or lr * g)
_BLOCK_ELEMENTS = 1 << 18  # rows per block keep the temporary (1 MB in float32) in cache


def weighted_moments(
    weights: torch.Tensor, samples: torch.Tensor, center: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum_i w_i (x_i - c), sum_i w_i (x_i - c)^2) over the rows of `samples`.

    Works on blocks of rows so that a (popsize, D) temporary is never allocated; the
    differences are taken before the sums, so a center far from zero loses no precision.
    """
    rows = max(1, _BLOCK_ELEMENTS // max(1, samples.shape[1]))
    first = torch.zeros_like(center)
    second = torch.zeros_like(center)
    for start in range(0, samples.shape[0], rows):
        w = weights[start : start + rows]
        diff = samples[start : start + rows] - center  # (rows, D)
        first.addmv_(diff.T, w)
        second.addmv_(diff.square_().T, w)
    return first, second


def _zero_mean_unless(weights: torch.Tensor, ranking: str, already: tuple[str, ...]):
    """Weights without their mean (a baseline), unless the ranking already centers them."""
    return weights if ranking in already else weights - weights.mean()


class SeparableGaussian:
    """N(mu, diag(sigma^2)) with gradients divided by the number of solutions."""

    def __init__(self, mu: torch.Tensor, sigma: torch.Tensor):
        self.mu = mu  # (D,)
        self.sigma = sigma  # (D,)

    @property
    def stdev(self) -> torch.Tensor:
        return self.sigma

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        out = torch.empty(n, len(self.mu), device=self.mu.device, dtype=self.mu.dtype)
        out.normal_(generator=generator)
        return out.mul_(self.sigma).add_(self.mu)

    def compute_gradients(self, samples, weights, ranking: str) -> dict[str, torch.Tensor]:
        weights = _zero_mean_unless(weights, ranking, ("centered", "normalized"))
        first, second = weighted_moments(weights, samples, self.mu)
        variance = self.sigma.square()
        n = len(weights)
        return {
            "mu": first / n,
            "sigma": (second - variance * weights.sum()) / (self.sigma * n),
        }

    def update(self, gradients, center_step: Step, stdev_lr: float) -> None:
        self.mu = self.mu + center_step(gradients["mu"])
        self.sigma = self.sigma + stdev_lr * gradients["sigma"]

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The parameters themselves, not copies: updates assign new tensors, never write
        into these (so a state taken before a generation still describes that moment)."""
        return dict(vars(self))

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for name, value in state.items():
            current = getattr(self, name)
            setattr(self, name, value.to(device=current.device, dtype=current.dtype).clone())


class SymmetricSeparableGaussian(SeparableGaussian):
    """Mirrored sampling: rows 2k and 2k+1 are mu + e_k and mu - e_k.

    The gradient is the pairwise estimate sum_k (f+ - f-)/2 e_k / (n/2) for mu and
    sum_k (f+ + f-)/2 (e_k^2 - sigma^2)/sigma / (n/2) for sigma. Writing e for the plus row
    and -e for the minus row, both equal the separable formula over all n rows divided by n,
    which is what the parent computes.
    """

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        if n % 2:
            raise ValueError(
                f"popsize={n} with symmetric sampling; expected an even number (mirrored pairs). "
                "Fix: use an even popsize or symmetric=false."
            )
        dim = len(self.mu)
        # Contiguous noise first: filling a strided view with normal_ is several times slower.
        noise = torch.empty(n // 2, dim, device=self.mu.device, dtype=self.mu.dtype)
        noise.normal_(generator=generator).mul_(self.sigma)
        pairs = torch.empty(n // 2, 2, dim, device=self.mu.device, dtype=self.mu.dtype)
        torch.add(self.mu, noise, out=pairs[:, 0])
        torch.sub(self.mu, noise, out=pairs[:, 1])
        return pairs.view(n, dim)

    def compute_gradients(self, samples, weights, ranking: str) -> dict[str, torch.Tensor]:
        if len(weights) % 2:
            raise ValueError(
                f"got {len(weights)} samples for a symmetric distribution; expected mirrored "
                "pairs (an even number). Fix: pass whole pairs as returned by ask()."
            )
        return super().compute_gradients(samples, weights, ranking)


class ExpSeparableGaussian(SeparableGaussian):
    """SNES: natural gradients, sigma updated in log space."""

    def compute_gradients(self, samples, weights, ranking: str) -> dict[str, torch.Tensor]:
        if ranking != "nes":
            weights = weights / weights.abs().sum().clamp(min=torch.finfo(weights.dtype).tiny)
        first, second = weighted_moments(weights, samples, self.mu)
        return {"mu": first, "sigma": second / self.sigma.square() - weights.sum()}

    def update(self, gradients, center_step: Step, stdev_lr: float) -> None:
        self.mu = self.mu + center_step(gradients["mu"])
        self.sigma = self.sigma * torch.exp(0.5 * stdev_lr * gradients["sigma"])


class ExpGaussian:
    """XNES: N(mu, A A^T) with natural gradients in local coordinates z = A^-1 (x - mu)."""

    def __init__(self, mu: torch.Tensor, sigma: torch.Tensor):
        self.mu = mu  # (D,)
        self.A = torch.diag(sigma)  # (D, D)
        self.A_inv = torch.diag(1.0 / sigma)  # tracked alongside A: no inverse per generation

    @property
    def stdev(self) -> torch.Tensor:
        """Marginal standard deviations, sqrt(diag(A A^T))."""
        return self.A.square().sum(dim=1).sqrt()

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        z = torch.empty(n, len(self.mu), device=self.mu.device, dtype=self.mu.dtype)
        z.normal_(generator=generator)
        return torch.addmm(self.mu, z, self.A.T)

    def compute_gradients(self, samples, weights, ranking: str) -> dict[str, torch.Tensor]:
        weights = _zero_mean_unless(weights, ranking, ("centered", "normalized", "nes"))
        z = (samples - self.mu) @ self.A_inv.T  # (n, D)
        eye = torch.eye(len(self.mu), device=z.device, dtype=z.dtype)
        return {"d": weights @ z, "M": (z.T * weights) @ z - weights.sum() * eye}

    def update(self, gradients, center_step: Step, stdev_lr: float) -> None:
        self.mu = self.mu + self.A @ center_step(gradients["d"])
        half_step = 0.5 * stdev_lr * gradients["M"]
        self.A = self.A @ torch.linalg.matrix_exp(half_step)
        self.A_inv = torch.linalg.matrix_exp(-half_step) @ self.A_inv

    state_dict = SeparableGaussian.state_dict
    load_state_dict = SeparableGaussian.load_state_dict
