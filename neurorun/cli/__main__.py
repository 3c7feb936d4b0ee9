"""`python -m neurorun.cli`: the neurorun command, as before the command line had a folder."""

from neurorun.cli.app import main

main()
