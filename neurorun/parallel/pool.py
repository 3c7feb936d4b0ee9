"""A pool of ray actors that works through a queue of jobs and replaces actors that die.

A job is a function of the actor slot that returns ``(method name, args)``; each idle actor
takes the next job of the queue. When an actor dies while running a job (killed, out of
memory, its node lost), the job goes back to the front of the queue and a replacement actor
takes the dead one's slot; results only come from jobs that finished, so nothing is counted
twice. An exception raised by the job itself stops the pool with the actor's traceback.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # ray colors the actor's name in tracebacks
START_TIMEOUT_S = 300.0  # waiting longer for actors means the cluster cannot place them
Job = Callable[[int], tuple[str, tuple[Any, ...]]]


class ActorRestartLimitError(RuntimeError):
    """Actors died more often than ``max_actor_restarts`` allows."""


class RemoteEvaluationError(RuntimeError):
    """A job failed inside an actor; the message holds the actor's traceback."""


class ActorPool:
    """``size`` actors made by ``make_actor(slot)``; ``run(jobs)`` returns results in order.

    Args:
        make_actor: builds the actor of a slot (also the replacement of a dead one).
        size: number of actors.
        max_restarts: how many dead actors may be replaced over the pool's life.
        on_replace: called with the slot after its actor was replaced.
    """

    def __init__(self, make_actor: Callable[[int], Any], size: int, max_restarts: int,
                 on_replace: Callable[[int], None] | None = None):
        import ray

        self._ray = ray
        self._make_actor = make_actor
        self.max_restarts = int(max_restarts)
        self.restarts = 0
        self._on_replace = on_replace
        self.actors = [make_actor(slot) for slot in range(size)]
        self.last_slots: list[int] = []
        try:
            self.pids = ray.get([actor.pid.remote() for actor in self.actors],
                                timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError as error:
            self.kill()
            raise RuntimeError(
                f"{size} evaluation actors did not start within {START_TIMEOUT_S:g} s: the "
                f"cluster cannot place them (free: {ray.available_resources()}). Fix: fewer "
                "actors (parallel.num_actors), fewer CPUs/GPUs each (parallel.actor_config, "
                "num_gpus_per_actor), or a larger cluster.") from error
        except ray.exceptions.RayActorError as error:
            self.kill()
            raise RuntimeError(f"the evaluation actors failed to start: {error}") from error

    def __len__(self) -> int:
        return len(self.actors)

    def run(self, jobs: list[Job], on: list[int] | None = None) -> list[Any]:
        """Results of ``jobs`` in their order, whichever actor ran each; ``on`` pins job i to
        actor slot ``on[i]`` (its replacement, if that actor dies). ``last_slots`` says which
        slot ran each job."""
        ray = self._ray
        queue = deque(range(len(jobs)))
        idle = deque(range(len(self.actors)))
        running: dict[Any, tuple[int, int]] = {}  # ref -> (slot, job index)
        results: list[Any] = [None] * len(jobs)
        self.last_slots = [-1] * len(jobs)
        while queue or running:
            for slot in list(idle):
                index = next((i for i in queue if on is None or on[i] == slot), None)
                if index is None:
                    continue
                queue.remove(index)
                idle.remove(slot)
                method, args = jobs[index](slot)
                running[getattr(self.actors[slot], method).remote(*args)] = (slot, index)
            (ref,), _ = ray.wait(list(running), num_returns=1)
            slot, index = running.pop(ref)
            try:
                results[index] = ray.get(ref)
                self.last_slots[index] = slot
            except ray.exceptions.RayActorError as error:
                self._replace(slot, error, running)
                queue.appendleft(index)
            except ray.exceptions.RayTaskError as error:
                self._cancel(running)
                text = _ANSI.sub("", str(error))
                raise RemoteEvaluationError(
                    f"job {index} failed on actor {slot} (pid {self.pids[slot]}); the actor's "
                    f"traceback follows:\n{text}") from error
            idle.append(slot)
        return results

    def _replace(self, slot: int, error: Exception, running: dict[Any, tuple[int, int]]) -> None:
        if self.restarts >= self.max_restarts:
            self._cancel(running)
            raise ActorRestartLimitError(
                f"actor {slot} (pid {self.pids[slot]}) died and {self.restarts} actors were "
                f"already replaced (max_actor_restarts={self.max_restarts}); stopping. Fix: "
                "find why actors die (memory: fewer envs per actor via max_num_envs; a lost "
                f"node), or raise parallel.max_actor_restarts. Cause: {error}") from error
        self.restarts += 1
        log.warning("actor %d (pid %s) died; its job runs again on a new actor (%d of "
                    "parallel.max_actor_restarts=%d replaced; ray's own lines are in the run's "
                    "neurorun.log)", slot, self.pids[slot], self.restarts, self.max_restarts)
        self._ray.kill(self.actors[slot], no_restart=True)
        self.actors[slot] = self._make_actor(slot)
        self.pids[slot] = self._ray.get(self.actors[slot].pid.remote())
        if self._on_replace is not None:
            self._on_replace(slot)

    def _cancel(self, running: dict[Any, tuple[int, int]]) -> None:
        for ref in running:
            with contextlib.suppress(Exception):  # finished already, or its actor died
                self._ray.cancel(ref)
        running.clear()

    def kill(self) -> None:
        """End every actor (idempotent)."""
        for actor in self.actors:
            with contextlib.suppress(Exception):  # already gone with its node
                self._ray.kill(actor, no_restart=True)
        self.actors = []
