"""promhpa's metrics adapter: custom, external and resource metrics from Prometheus.

An aggregated API server, grouped by concern; the rule language (``rules``) and Prometheus
access (``promclient``) are packages below it, shared with the controller's ``replay``.

* ``serving``: ``requests`` reads a path exactly as the kube-apiserver does and turns it
  into a small ``MetricRequest`` (the one place URL shapes are understood); ``auth``
  authenticates the front proxy or a bearer token and authorizes that same reading;
  ``health`` keeps probes and overload apart from the work; ``app`` is the thin aiohttp
  layer that serializes; ``providers`` answer a request through the ``registry`` (which
  series and rule serve a metric; discovery) and ``rules.queries``; ``objects`` resolves
  ``*`` + ``labelSelector`` through watch-backed informers; ``reload`` re-reads the rule
  file; ``rules_webhook`` checks rules before they reach any adapter.
* ``team``: MetricRules and ClusterMetricRules, judged in worker processes (``judging``),
  confined to their namespace (``isolation``), held to size and cost limits
  (``query_size``, ``query_cost``, ``team_gate``) and served by ``team_watch``.
* ``forwarding``: ``upstreams`` forwards the metrics other providers serve.
* ``commandline``: ``flags`` (ours, and prometheus-adapter's read by ``compat``) and
  ``check_config``.
* ``server`` is the lifecycle (the app factory and its cleanup contexts, the listeners, the
  drain); ``__main__`` dispatches.
"""
