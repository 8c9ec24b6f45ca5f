"""Whether a rule file or a file of MetricRules may be served, and the report that says why:
the same verdict for ``check-config``, the rules webhook and the adapter's own loading
(``rules.admission.judge`` underneath, Prometheus' answers on top when one is asked)."""
