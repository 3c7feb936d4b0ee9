"""Several CPU devices and jax's LAPACK kernels: envs stepped in chunks that keep each
kernel call inline (see ``InlineLapack``)."""

from __future__ import annotations

from typing import Any

import numpy as np

LAPACK_INLINE_WORK = 200_000  # below this many flops a call, jax's LAPACK kernels run inline


class InlineLapack:
    """A batched env whose reset and step run in chunks of envs small enough that every
    LAPACK kernel of its physics runs inline (several CPU devices).

    jax's CPU LAPACK kernels (the Cholesky factor and triangular solves of brax's generalized
    backend and of MuJoCo MJX) split a batch whose work passes ``LAPACK_INLINE_WORK`` flops
    over XLA's intra-op thread pool, one thread per core, and block their own pool thread until
    the parts are done. When as many devices as pool threads run such a kernel at once, every
    thread waits and none is left to do the parts: brax ant (generalized) with 128 envs a
    device on 2 host devices stalled forever in its first reset. Chunks of ``chunk`` envs
    (found from the kernels' matrix sizes in the traced program) keep each call inline.
    """

    def __init__(self, env: Any):
        self.env, self.chunk = env, _inline_chunk(env)

    def __getattr__(self, name: str) -> Any:  # observation_size, action_size, ...
        return getattr(self.env, name)

    def reset(self, keys: Any) -> Any:
        return self._chunked(self.env.reset, keys)

    def step(self, state: Any, action: Any) -> Any:
        return self._chunked(self.env.step, state, action)

    def _chunked(self, function: Any, *batched: Any) -> Any:
        import jax

        size = jax.tree_util.tree_leaves(batched)[0].shape[0]
        if self.chunk is None or size <= self.chunk:
            return function(*batched)
        count = -(-size // self.chunk)
        pad = count * self.chunk - size

        def split(x: Any) -> Any:  # (size, ...) -> (count, chunk, ...), padded with row 0
            x = jax.numpy.concatenate([x, jax.numpy.repeat(x[:1], pad, axis=0)]) if pad else x
            return x.reshape(count, self.chunk, *x.shape[1:])

        out = jax.lax.map(lambda args: function(*args),
                          jax.tree_util.tree_map(split, batched))
        return jax.tree_util.tree_map(  # no -1: some leaves have no elements
            lambda x: x.reshape(count * self.chunk, *x.shape[2:])[:size], out)


def _inline_chunk(env: Any) -> int | None:
    """The most envs a chunk may hold so that each LAPACK kernel in ``env``'s reset and step
    stays below ``LAPACK_INLINE_WORK`` flops (n**3 for an n x n matrix, the most any of the
    kernels counts); None: no LAPACK kernel."""
    import re

    import jax

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
