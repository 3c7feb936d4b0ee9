"""neurorun: neuroevolution experiments from the command line.

Evolution strategies (PGPE with ClipUp, ARS, OpenAI-ES, CEM, SNES, XNES, CMA-ES) search the
parameters of neural-network policies on gymnasium, EnvPool, brax and MuJoCo Playground
environments. Subpackages import their heavy dependencies (brax, jax, ray, Playground) lazily,
so `import neurorun` stays cheap.
"""

__version__ = "0.1.0"
