"""neurorun: neuroevolution experiments from the command line.

Evolution strategies (PGPE with ClipUp, CEM, SNES, XNES, CMA-ES) search the parameters of
neural-network policies on gymnasium and brax environments. Subpackages import their heavy
dependencies (brax, jax, ray) lazily, so `import neurorun` stays cheap.
"""

__version__ = "0.1.0"
