"""The command line: the Hydra app, the command line before Hydra reads it, sweeps, hints."""


def __getattr__(name: str):
    if name == "main":
        from neurorun.cli.app import main  # Hydra and the run load on first use

        return main
    raise AttributeError(f"module 'neurorun.cli' has no attribute {name!r}")
