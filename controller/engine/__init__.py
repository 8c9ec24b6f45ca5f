"""The pure HPA decision engine.

``decide(parse_snapshot(data))`` is one reconcile of one HorizontalPodAutoscaler, exactly
as upstream's kube-controller-manager would make it, computed from plain data: no clock
(``now`` is in the snapshot), no I/O, no randomness. The modules follow the algorithm:

* ``parse``  -- wire-format snapshot (or one reconcile's reads) to typed values, with
  API-server defaulting;
* ``pods`` -- which pods count (ignored, unready, missing, ready) and their requests;
* ``metric_queries`` -- the answers of the three metrics APIs, as recorded in the snapshot;
* ``replica_calculator`` -- the per-target arithmetic, in Go's integer/float semantics;
* ``metrics`` -- one proposal per metric spec and the rule that combines them;
* ``behavior`` -- stabilization windows, rate policies, min/max, scale-event history;
* ``conditions`` -- status conditions as upstream updates them;
* ``reconcile`` -- the control flow that ties them together;
* ``explain`` -- the human-readable account behind ``decide --explain``.

The live controller types what it read with the same parser (``parse.observed``) and
calls the same ``decide``.
"""

from .parse import SnapshotError, parse_snapshot
from .reconcile import Decision, decide

__all__ = ["Decision", "SnapshotError", "decide", "parse_snapshot"]
