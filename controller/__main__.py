"""``python -m controller``: through ``shared.entry``, which handles SIGTERM before anything
heavy is imported."""

from shared.entry import controller

controller()
