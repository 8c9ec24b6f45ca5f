"""promhpa's HPA controller.

``controller.engine`` is the pure decision engine (upstream's algorithm over plain data,
no I/O, no clock); ``controller.live`` is the edge around it (informers, work queue, the
one path from live state to a snapshot, writes, leader election); ``controller.cli`` is
the command line: ``run`` (live), ``decide`` (offline, the same engine) and ``snapshot``
(the live reconcile's input, saved to decide offline).
"""
