"""Metrics other providers serve (KEDA, prometheus-adapter, a second promhpa), forwarded."""
