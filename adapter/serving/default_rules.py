# ruff: noqa: E501  -- the rule text is kept verbatim, long lines and all
"""The rules prometheus-adapter ships by default, so a user without a config gets the same
metrics: container counters and gauges per pod, and every other namespaced series --
``*_seconds_total`` and ``*_total`` counters as per-second rates with the suffix stripped,
everything else as a gauge under its own name."""

DEFAULT_RULES = r"""
rules:
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: []
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: ^container_(.*)_seconds_total$, as: ""}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[5m])) by (<<.GroupBy>>)
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters:
  - isNot: ^container_.*_seconds_total$
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: ^container_(.*)_total$, as: ""}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[5m])) by (<<.GroupBy>>)
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters:
  - isNot: ^container_.*_total$
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: ^container_(.*)$, as: ""}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>,container!="POD"}) by (<<.GroupBy>>)
- seriesQuery: '{namespace!="",__name__!~"^container_.*"}'
  seriesFilters:
  - isNot: .*_total$
  resources: {template: <<.Resource>>}
  name: {matches: "", as: ""}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
- seriesQuery: '{namespace!="",__name__!~"^container_.*"}'
  seriesFilters:
  - isNot: .*_seconds_total
  resources: {template: <<.Resource>>}
  name: {matches: ^(.*)_total$, as: ""}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)
- seriesQuery: '{namespace!="",__name__!~"^container_.*"}'
  seriesFilters: []
  resources: {template: <<.Resource>>}
  name: {matches: ^(.*)_seconds_total$, as: ""}
  metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)
resourceRules:
  cpu:
    containerQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[5m])) by (<<.GroupBy>>)
    nodeQuery: sum(rate(node_cpu_seconds_total{mode!="idle",<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  memory:
    containerQuery: sum(container_memory_working_set_bytes{<<.LabelMatchers>>,container!=""}) by (<<.GroupBy>>)
    nodeQuery: sum(node_memory_MemTotal_bytes{<<.LabelMatchers>>} - node_memory_MemAvailable_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  window: 5m
"""
