"""neurorun: neuroevolution experiments from the command line.

Evolution strategies (PGPE with ClipUp, ARS, OpenAI-ES, CEM, SNES, XNES, CMA-ES) search the
parameters of neural-network policies on gymnasium, EnvPool, brax and MuJoCo Playground
environments. Subpackages import their heavy dependencies (brax, jax, ray, Playground) lazily,
so `import neurorun` stays cheap.
"""

import os

__version__ = "0.1.0"

# torch's CPU allocator backs buffers of 2 MB and more with transparent huge pages: a
# generation's samples and noise (popsize x D numbers, fresh each generation) then cost a few
# hundred page faults instead of one per 4 KB page (docs/benchmarks.md). torch reads the
# variable once, at its first allocation, so it is set before neurorun imports torch; a value
# the user set wins.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")


# the public names, imported when first used: `import neurorun` stays light (no torch)
_LAZY = {"run": "neurorun.loop.runner", "Callbacks": "neurorun.loop.callbacks",
         "compose_config": "neurorun.cli.app"}
__all__ = ["Callbacks", "__version__", "compose_config", "run"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'neurorun' has no attribute {name!r}")
