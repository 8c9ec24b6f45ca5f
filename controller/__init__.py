"""promhpa's HPA controller.

``controller.engine`` is the pure decision engine (upstream's algorithm over plain data);
``controller.cli`` is the command line (``decide`` offline today; the live reconciler
builds snapshots from the cluster and calls the same engine).
"""
