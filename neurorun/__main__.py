"""`python -m neurorun`: the neurorun command."""

from neurorun.cli.app import main

main()
