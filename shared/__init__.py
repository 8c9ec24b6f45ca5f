"""Code both promhpa processes use: quantities, label selectors, Go durations and times,
and logging setup. Nothing here imports the adapter or the controller."""
