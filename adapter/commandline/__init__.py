"""The adapter's command line: its flags, prometheus-adapter's flags read as ours, and
``check-config``."""
