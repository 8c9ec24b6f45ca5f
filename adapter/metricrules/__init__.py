"""MetricRules and ClusterMetricRules: judging (in worker processes), confinement to a namespace,
the size and cost limits, the watch that serves them."""
