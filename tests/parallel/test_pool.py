"""``ActorPool``'s queue, pinning, replacement of dead actors and error reports, on a fake ray
(no cluster starts): each scenario's slots, restarts and messages are traced by hand."""

import sys
from types import SimpleNamespace

import pytest

from neurorun.parallel.pool import ActorPool, ActorRestartLimitError, RemoteEvaluationError


class RayActorError(Exception):
    pass


class RayTaskError(Exception):
    pass


class GetTimeoutError(Exception):
    pass


class Ref:
    """A job's result, computed when ``ray.get`` asks for it; ``delay`` orders ``ray.wait``."""

    def __init__(self, run, delay: float = 0.0):
        self.run, self.delay = run, delay


class Method:
    def __init__(self, function, delay=lambda *args: 0.0):
        self.function, self.delay = function, delay

    def remote(self, *args):
        return Ref(lambda: self.function(*args), self.delay(*args))


class FakeRay:
    """What the pool calls of ray, synchronously: ``wait`` returns the running job with the
    least delay (the first submitted among equals)."""

    def __init__(self, start_error: Exception | None = None):
        self.exceptions = SimpleNamespace(RayActorError=RayActorError,
                                          RayTaskError=RayTaskError,
                                          GetTimeoutError=GetTimeoutError)
        self.start_error = start_error
        self.killed, self.cancelled = [], []

    def get(self, refs, timeout=None):
        if isinstance(refs, list):
            if self.start_error is not None:
                raise self.start_error
            return [ref.run() for ref in refs]
        return refs.run()

    def wait(self, refs, num_returns=1):
        first = min(refs, key=lambda ref: ref.delay)
        return [first], [ref for ref in refs if ref is not first]

    def kill(self, actor, no_restart=True):
        self.killed.append(actor)

    def cancel(self, ref):
        self.cancelled.append(ref)

    def available_resources(self):
        return {"CPU": 0.0}


class Actor:
    """``square(i)`` of job i; dies (RayActorError) on the jobs in ``dies_on``, raises a task
    error on those in ``fails_on``, and records the jobs it finished."""

    def __init__(self, pid: int, dies_on=(), fails_on=(), delay=lambda i: 0.0):
        self.pid = Method(lambda: pid)
        self.finished = []
        self.square = Method(self._square, delay)
        self.dies_on, self.fails_on = set(dies_on), set(fails_on)

    def _square(self, i):
        if i in self.dies_on:
            raise RayActorError(f"the actor running job {i} died")
        if i in self.fails_on:
            raise RayTaskError(f"\x1b[36m(EvaluationWorker pid=7)\x1b[39m job {i}: boom")
        self.finished.append(i)
        return i * i


@pytest.fixture
def ray(monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)  # the pool's `import ray` finds the fake
    return fake


def pool_of(actors_by_slot: dict[int, list[Actor]], max_restarts: int = 0, replaced=None):
    """A pool whose slot s gets the actors ``actors_by_slot[s]`` in turn (its replacements)."""
    made = []

    def make_actor(slot):
        made.append(slot)
        return actors_by_slot[slot].pop(0)

    pool = ActorPool(make_actor, len(actors_by_slot), max_restarts,
                     on_replace=None if replaced is None else replaced.append)
    return pool, made


def squares(count: int) -> list:
    return [lambda slot, i=i: ("square", (i,)) for i in range(count)]


def test_results_come_in_job_order_from_whichever_actor_is_free(ray):
    slow = Actor(100, delay=lambda i: 5.0 if i == 0 else 1.0)  # job 0 takes long
    fast = Actor(101, delay=lambda i: 1.0)
    pool, _ = pool_of({0: [slow], 1: [fast]})
    assert pool.pids == [100, 101] and len(pool) == 2
    assert pool.run(squares(4)) == [0, 1, 4, 9]
    # slot 0 holds job 0 while slot 1 takes jobs 1, 2 and 3 off the queue
    assert pool.last_slots == [0, 1, 1, 1]
    assert slow.finished == [0] and fast.finished == [1, 2, 3]


def test_pinned_jobs_run_on_their_slot(ray):
    actors = {0: [Actor(100)], 1: [Actor(101)]}
    first, second = actors[0][0], actors[1][0]
    pool, _ = pool_of(actors)
    assert pool.run(squares(4), on=[1, 1, 0, 1]) == [0, 1, 4, 9]
    assert pool.last_slots == [1, 1, 0, 1]
    assert first.finished == [2] and second.finished == [0, 1, 3]


def test_a_dead_actor_is_replaced_and_its_job_runs_once_more(ray):
    dying, other, replacement = Actor(100, dies_on={0}), Actor(101), Actor(102)
    replaced = []
    pool, made = pool_of({0: [dying, replacement], 1: [other]}, max_restarts=1,
                         replaced=replaced)
    assert pool.run(squares(3)) == [0, 1, 4]
    # job 0 dies on slot 0, goes back to the queue's front and runs on the new slot-0 actor;
    # slot 1 finishes job 1 first (submitted before the retry), then takes job 2
    assert pool.last_slots == [0, 1, 1]
    assert made == [0, 1, 0] and replaced == [0] and pool.restarts == 1
    assert ray.killed == [dying] and pool.actors == [replacement, other]
    assert pool.pids == [102, 101]
    assert dying.finished == [] and replacement.finished == [0] and other.finished == [1, 2]


def test_a_pinned_job_follows_its_slot_to_the_replacement(ray):
    dying, other, replacement = Actor(100, dies_on={0}), Actor(101), Actor(102)
    pool, _ = pool_of({0: [dying, replacement], 1: [other]}, max_restarts=1)
    assert pool.run(squares(2), on=[0, 1]) == [0, 1]
    assert pool.last_slots == [0, 1] and replacement.finished == [0]


def test_deaths_beyond_max_actor_restarts_stop_the_pool_and_cancel_the_rest(ray):
    first, second = Actor(100, dies_on={0}), Actor(102, dies_on={0})
    other = Actor(101)
    pool, _ = pool_of({0: [first, second], 1: [other]}, max_restarts=1)
    with pytest.raises(ActorRestartLimitError,
                       match=r"^actor 0 \(pid 102\) died and 1 actors were already replaced "
                             r"\(max_actor_restarts=1\); stopping\. Fix: .*Cause: the actor "
                             "running job 0 died"):
        pool.run(squares(3))
    # the retry of job 0 died while job 2 ran on slot 1: job 2 is cancelled
    assert len(ray.cancelled) == 1 and other.finished == [1]
    ray.cancelled[0].run()
    assert other.finished == [1, 2]  # the cancelled ref was job 2's


def test_a_failing_job_stops_the_pool_with_the_actors_traceback_uncolored(ray):
    pool, _ = pool_of({0: [Actor(100)], 1: [Actor(101, fails_on={1})]})
    with pytest.raises(RemoteEvaluationError) as raised:
        pool.run(squares(3))
    assert str(raised.value) == ("job 1 failed on actor 1 (pid 101); the actor's traceback "
                                 "follows:\n(EvaluationWorker pid=7) job 1: boom")
    assert pool.restarts == 0


@pytest.mark.parametrize("error, message", [
    (GetTimeoutError(), r"^2 evaluation actors did not start within 300 s: the cluster cannot "
                        r"place them \(free: \{'CPU': 0.0\}\)\. Fix: fewer actors"),
    (RayActorError("no memory"), "^the evaluation actors failed to start: no memory$"),
])
def test_actors_that_do_not_start_are_killed_and_named(ray, error, message):
    ray.start_error = error
    actors = [Actor(100), Actor(101)]
    with pytest.raises(RuntimeError, match=message):
        pool_of({0: [actors[0]], 1: [actors[1]]})
    assert ray.killed == actors


def test_kill_ends_every_actor_once(ray):
    actors = [Actor(100), Actor(101)]
    pool, _ = pool_of({0: [actors[0]], 1: [actors[1]]})
    pool.kill()
    pool.kill()
    assert ray.killed == actors and pool.actors == [] and len(pool) == 0
