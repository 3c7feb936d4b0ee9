"""The compiled evaluation's programs on the devices: each one jitted once per shape,
every device running its share of the pairs (``shard_map`` over a one-axis mesh).

jax is imported inside the methods: this module loads with ``neurorun.problems``, which runs
on envs without jax too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from neurorun.nets.arrays import ArrayPolicy
from neurorun.problems.jax.compiling import Program

AXIS = "devices"  # the mesh axis the pairs are split over


class DevicePrograms:
    """The programs of one env and one network on ``devices``, each compiled at its first call
    for its shapes (``ProgramShape``): ``first``, ``queue``, ``drain`` and ``hand_over``.

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
        self._programs: dict[tuple, Program] = {}

    def put(self, tree: Any) -> Any:
        """``tree`` on the devices, each leaf's first axis split over them."""
        import jax

        return jax.device_put(tree, self._split)

    def first(self, shape: Any, slots: int) -> Program:
        """A rollout's first carry: each of ``slots`` slots pending its pair's reset."""
        def build() -> Program:
            from neurorun.problems.jax import program

            env, policy = self.env, self.policy  # the program holds them, not self
            return self._jitted(lambda inputs: program.first_carry(
                env, policy, shape, inputs, slots), split=1)
        return self._program(("first", shape, slots), build)

    def queue(self, shape: Any) -> Program:
        """Steps a population's pairs over the env slots, until at most ``limit`` are busy
        and no pair waits (-1: to the end)."""
        return self._phase("queue", shape)

    def drain(self, shape: Any) -> Program:
        """The queue's last busy slots to their end, or a small rollout whole."""
        return self._phase("drain", shape)

    def hand_over(self, queue: Any, drain: Any) -> Program:
        """The queue program's last busy slots as the drain program's inputs and carry."""
        def build() -> Program:
            from neurorun.problems.jax import program

            return self._jitted(lambda inputs, carry: program.hand_over(
                inputs, carry, queue, drain), split=2)
        return self._program(("hand over", queue, drain), build)

    def _phase(self, name: str, shape: Any) -> Program:
        """A physics program (queue or drain): it says what it compiles."""
        def build() -> Program:
            import jax

            from neurorun.problems.jax import program

            env, policy = self.env, self.policy
            devices = f"{len(self.devices)} {self.devices[0].platform} device(s)"
            return self._jitted(
                lambda inputs, carry, limit: program.phase(env, policy, shape, inputs, carry,
                                                           limit),
                split=2, replicated=1,
                label=f"{self.label} | {name} {shape} | {devices} | jax {jax.__version__}",
                description=(f"the {name} program of {self.spec} for {shape.slots} env slots x "
                             f"{devices} ({shape.pairs} pairs each, {shape.chunk} envs a step "
                             "call)"))
        return self._program((name, shape), build)

    def _program(self, key: tuple, build: Callable[[], Program]) -> Program:
        """The program of ``key``, made by ``build()`` at its first call."""
        if key not in self._programs:
            self._programs[key] = build()
        return self._programs[key]

    def _jitted(self, function: Any, split: int, replicated: int = 0, label: str | None = None,
                description: str = "") -> Program:
        """``function`` jitted on every device: its first ``split`` arguments per-device arrays
        (a device gets its block), the next ``replicated`` the same on all."""
        import jax
        from jax.sharding import PartitionSpec as P

        def body(*arguments: Any) -> Any:
            return _stacked(function(*map(_local, arguments[:split]), *arguments[split:]))
        specs = (P(AXIS),) * split + (P(),) * replicated
        return Program(jax.jit(jax.shard_map(body, mesh=self.mesh, in_specs=specs,
                                             out_specs=P(AXIS), check_vma=False)),
                       label, description)

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
        carry = jax.eval_shape(self.first(drain, drain.slots).function, inputs)
        # an array without elements comes out replicated (MJX's empty fields)
        carry = jax.tree_util.tree_map(lambda leaf: jax.ShapeDtypeStruct(
            leaf.shape, leaf.dtype, sharding=self._split if leaf.size else
            NamedSharding(self.mesh, P())), carry)
        return inputs, carry, jax.ShapeDtypeStruct((), jnp.int32)


def _local(tree: Any) -> Any:
    """A device's block of per-device arrays (leading axis 1 under shard_map) without it."""
    import jax

    return jax.tree_util.tree_map(lambda x: x[0], tree)


def _stacked(tree: Any) -> Any:
    """A device's results with the leading device axis that out_specs concatenates."""
    import jax

    return jax.tree_util.tree_map(lambda x: x[None], tree)
