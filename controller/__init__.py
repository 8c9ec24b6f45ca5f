"""promhpa's HPA controller.

``controller.engine`` is the pure decision engine (upstream's algorithm over plain data,
no I/O, no clock); ``controller.live`` is the edge around it (informers, work queue, the
one path from live state to a snapshot, writes, leader election); ``controller.replay``
replays recorded history through the engine; ``controller.commands`` holds one module per
command (``run``, ``decide``, ``snapshot``, ``compare``, ``why``, ``replay``), and
``controller.cli`` only dispatches to them.
"""
