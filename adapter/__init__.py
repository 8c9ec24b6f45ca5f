"""promhpa's metrics adapter (custom, external and resource metrics from Prometheus).

Not implemented yet: see the adapter issue. The package exists so the distribution's
layout and import contracts are in place from the start.
"""
