"""The live controller: the I/O edge around the pure engine.

Informers keep HPAs and pods in memory; a work queue schedules each HPA about once per
sync period and promptly after it changes; a reconcile reads the scale subresource and the
metrics APIs, assembles a snapshot, asks ``controller.engine.decide`` -- the same function
``decide`` uses offline -- and writes what it returns (scale, status, events).
"""
