"""The observation statistics a ray worker exchanges with the main process: it receives the
global ones, and sends back what its evaluations added since."""

from __future__ import annotations

from neurorun.problems.running_norm import RunningNorm


class ObsSync:
    """The statistics as last exchanged, to tell what was added since."""

    def __init__(self, stats: RunningNorm | None):
        self._synced = None if stats is None else stats.copy()

    def mark(self, stats: RunningNorm) -> None:
        """``stats`` are what both sides now hold."""
        self._synced = stats.copy()

    def delta(self, stats: RunningNorm) -> RunningNorm:
        """What ``stats`` added since the last exchange; marks ``stats`` exchanged."""
        delta = stats - self._synced
        self.mark(stats)
        return delta
