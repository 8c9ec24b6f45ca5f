"""What confining a namespaced rule's query costs: `python -m benchmarks.isolation`.

Per query: Prometheus' parser alone (promql-parser's parse, the floor of any parse-based
approach), ``adapter.isolation.confine`` on a query it has not seen (parse, rewrite, print,
parse again and check), and on one it has (the cache a serving adapter hits for every
repeated query). Pure CPU, one process; the figures are microseconds per query.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit

import promql_parser as pp

from adapter.isolation import confine

QUERIES = {
    "one selector": 'sum(http_requests{namespace="team-a",service="web"})',
    "pods/* rate": (
        'sum by (pod) (rate(http_requests_total{namespace="team-a",pod=~"web-1|web-2|web-3"}[2m]))'
    ),
    "join": (
        'sum by (pod) (rate(container_cpu_usage_seconds_total{container!=""}[5m])) '
        "/ on (pod) group_left (node) kube_pod_info"
    ),
    "subquery": "max_over_time(sum by (queue) (rate(jobs_total[1m]))[10m:30s])",
}


def per_query_us(fn: object, number: int, rounds: int) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=rounds)) / number * 1e6  # type: ignore[arg-type]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=2000, help="queries per timing")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    uncached = confine.__wrapped__
    print("| query | parse only, µs | confine (not seen), µs | confine (cached), µs | not seen / parse |")
    print("|---|---:|---:|---:|---:|")
    for name, q in QUERIES.items():
        parse = per_query_us(lambda q=q: pp.parse(q), a.number, a.rounds)
        cold = per_query_us(lambda q=q: uncached(q, "team-a"), a.number, a.rounds)
        confine(q, "team-a")
        warm = per_query_us(lambda q=q: confine(q, "team-a"), a.number * 10, a.rounds)
        print(f"| {name} | {parse:.1f} | {cold:.1f} | {warm:.2f} | {cold / parse:.1f}x |")
    print(f"\n(median of {a.rounds} timings of {a.number} queries each; one core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
