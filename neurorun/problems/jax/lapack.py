"""jax's CPU LAPACK kernels on several host devices: how many envs a step call may hold so
that none of them waits for a thread that every device holds."""

from __future__ import annotations

import re
from typing import Any

import jax
import numpy as np

LAPACK_INLINE_WORK = 200_000  # below this many flops a call, jax's LAPACK kernels run inline


def inline_chunk(env: Any) -> int | None:
    """The most envs a step call may hold so that each LAPACK kernel in ``env``'s reset and
    step stays below ``LAPACK_INLINE_WORK`` flops (n**3 for an n x n matrix, the most any of
    the kernels counts); None: no LAPACK kernel.

    jax's CPU LAPACK kernels (the Cholesky factor and triangular solves of brax's generalized
    backend and of MuJoCo MJX) split a batch whose work passes ``LAPACK_INLINE_WORK`` flops
    over XLA's intra-op thread pool, one thread per core, and block their own pool thread until
    the parts are done. When as many devices as pool threads run such a kernel at once, every
    thread waits and none is left to do the parts: brax ant (generalized) with 128 envs a
    device on 2 host devices stalled forever in its first reset."""
    keys = jax.ShapeDtypeStruct((1, 2), np.uint32)
    state = jax.eval_shape(env.reset, keys)
    actions = jax.ShapeDtypeStruct((1, env.action_size), np.float32)
    text = (jax.jit(env.reset).lower(keys).as_text()
            + jax.jit(env.step).lower(state, actions).as_text())
    sizes = [max(int(n) for n in dims.split("x")[-3:-1])  # a matrix's rows and columns
             for call in re.findall(r"@lapack_\w+.*", text)
             for dims in re.findall(r"tensor<((?:\d+x){3,})f", call)]
    if not sizes:
        return None
    return max(1, (LAPACK_INLINE_WORK - 1) // max(sizes) ** 3)
