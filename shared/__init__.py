"""Code both promhpa processes use: quantities, label selectors, Go durations and times,
logging setup, and ``shared.kube``, the one edge to the Kubernetes API. Nothing here
imports the adapter or the controller (an import contract says so)."""
