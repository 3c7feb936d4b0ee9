"""What every part may use: errors and exit codes, atomic writes, seeding, extras,
user code, memory, env-id names, the objective's sense."""
