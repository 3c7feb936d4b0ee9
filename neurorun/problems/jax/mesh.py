"""The compiled evaluation's programs on the devices: each one jitted once per kind and shape,
every device running its share of the pairs (``shard_map`` over a one-axis mesh).

jax is imported inside the methods: this module loads with ``neurorun.problems``, which runs
on envs without jax too.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from neurorun.nets.arrays import ArrayPolicy
from neurorun.problems.jax.compiling import Program

AXIS = "devices"  # the mesh axis the pairs are split over


class ProgramKind(enum.Enum):
    """The compiled evaluation's programs (each compiled once per ``ProgramShape``)."""

    FIRST = "first"  # a rollout's first carry: every slot pending its pair's reset
    QUEUE = "queue"  # steps the pairs over the env slots (a population's shape)
    DRAIN = "drain"  # the queue's last busy slots, or a small rollout whole
    HAND_OVER = "hand over"  # the queue's last busy slots as the drain's inputs and carry


class DevicePrograms:
    """The programs of one env and one network on ``devices``, by kind and shape.

    ``label`` names what makes the programs what they are (the env's config and the network)
    in the record of compile times; ``spec`` names the env in messages.
    """

    def __init__(self, env: Any, policy: ArrayPolicy, devices: Sequence[Any], spec: str,
                 label: str):
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        self.env, self.policy, self.spec, self.label = env, policy, spec, label
        self.devices = list(devices)
        self.mesh = Mesh(np.array(self.devices), (AXIS,))
        self._split = NamedSharding(self.mesh, P(AXIS))  # each leaf's first axis over them
        self._programs: dict[tuple[ProgramKind, Any], Program] = {}

    def put(self, tree: Any) -> Any:
        """``tree`` on the devices, each leaf's first axis split over them."""
        import jax

        return jax.device_put(tree, self._split)

    def __call__(self, kind: ProgramKind, shape: Any) -> Program:
        """The program ``kind`` of ``shape`` (FIRST: ``(shape, slots)``; HAND_OVER: ``(queue
        shape, drain shape)``), compiled at its first call; the physics programs (queue,
        drain) say what they compile."""
        key = (kind, shape)
        if key not in self._programs:
            label = description = None
            if kind in (ProgramKind.QUEUE, ProgramKind.DRAIN):
                import jax

                devices = f"{len(self.devices)} {self.devices[0].platform} device(s)"
                description = (f"the {kind.value} program of {self.spec} for {shape.slots} env "
                               f"slots x {devices} ({shape.pairs} pairs each, {shape.chunk} "
                               "envs a step call)")
                label = (f"{self.label} | {kind.value} {shape} | {devices} | "
                         f"jax {jax.__version__}")
            self._programs[key] = Program(self._traced(kind, shape), label, description or "")
        return self._programs[key]

    @property
    def compile_seconds(self) -> float:
        """Spent compiling (or loading from jax's cache) so far."""
        return sum(program.seconds for program in self._programs.values())

    def drain_arguments(self, drain: Any, width: int, size: int) -> tuple:
        """The drain program's arguments as shapes on the devices (nothing is computed), for
        ``width`` parameters and observations of ``size``: what compiling it ahead needs."""
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        from neurorun.problems.jax.program import Inputs

        def shape(*dims: int, dtype: Any = np.float32) -> Any:
            return jax.ShapeDtypeStruct((len(self.devices), *dims), dtype, sharding=self._split)

        inputs = Inputs(
            shape(drain.solutions + 1, width), shape(drain.pairs, dtype=np.int32),
            shape(drain.pairs, 2, dtype=np.uint32), shape(drain.pairs, 2, dtype=np.uint32),
            shape(size), shape(size), shape(size), shape(), shape(dtype=np.int32))
        carry = jax.eval_shape(self(ProgramKind.FIRST, (drain, drain.slots)).function, inputs)
        # an array without elements comes out replicated (MJX's empty fields)
        carry = jax.tree_util.tree_map(lambda leaf: jax.ShapeDtypeStruct(
            leaf.shape, leaf.dtype, sharding=self._split if leaf.size else
            NamedSharding(self.mesh, P())), carry)
        return inputs, carry, jax.ShapeDtypeStruct((), jnp.int32)

    def _traced(self, kind: ProgramKind, shape: Any) -> Any:
        import jax
        from jax.sharding import PartitionSpec as P

        from neurorun.problems.jax import program

        env, policy = self.env, self.policy
        if kind is ProgramKind.FIRST:
            def body(inputs: Any) -> Any:
                return _stacked(program.first_carry(env, policy, shape[0], _local(inputs),
                                                    shape[1]))
            specs: tuple = (P(AXIS),)
        elif kind in (ProgramKind.QUEUE, ProgramKind.DRAIN):
            def body(inputs: Any, carry: Any, limit: Any) -> Any:
                return _stacked(program.phase(env, policy, shape, _local(inputs),
                                              _local(carry), limit))
            specs = (P(AXIS), P(AXIS), P())
        else:
            def body(inputs: Any, carry: Any) -> Any:
                return _stacked(program.hand_over(_local(inputs), _local(carry), *shape))
            specs = (P(AXIS), P(AXIS))
        return jax.jit(jax.shard_map(body, mesh=self.mesh, in_specs=specs,
                                     out_specs=P(AXIS), check_vma=False))


def _local(tree: Any) -> Any:
    """A device's block of per-device arrays (leading axis 1 under shard_map) without it."""
    import jax

    return jax.tree_util.tree_map(lambda x: x[0], tree)


def _stacked(tree: Any) -> Any:
    """A device's results with the leading device axis that out_specs concatenates."""
    import jax

    return jax.tree_util.tree_map(lambda x: x[None], tree)
