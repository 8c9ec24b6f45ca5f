"""promhpa's metrics adapter: custom, external and resource metrics from Prometheus.

An aggregated API server in layers, each a module:

* ``requests`` reads a path exactly as the kube-apiserver does and turns it into a small
  ``MetricRequest`` (the one place URL shapes are understood); ``auth`` authenticates the
  front proxy or a bearer token and authorizes that same reading; ``health`` keeps probes
  and overload apart from the work; ``app`` is the thin aiohttp layer that serializes.
* ``providers`` answer a request through the ``registry`` (which series and rule serve a
  metric; discovery) and ``queries`` (a request plus a rule is one PromQL query, built by
  the pure ``naming``/``promql``/``templates`` layer from the ``config`` rules).
* ``promapi`` is the interface to Prometheus; ``prometheus`` implements it with
  prometheus-api-client (threads, deadline, cache, coalescing).
* ``objects`` resolves ``*`` + ``labelSelector`` through watch-backed informers.
* ``upstreams`` forwards the metrics other providers serve (``upstream_config``).
* ``check_config`` validates a rule file; ``flags`` is the command line; ``server`` is the
  lifecycle (the app factory and its cleanup contexts, the listeners, the drain);
  ``__main__`` dispatches.
"""
