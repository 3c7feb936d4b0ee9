"""The run loop: the runner, building the parts, stop rules, restarts, the objective,
signals."""
