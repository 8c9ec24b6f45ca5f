"""What confining a namespaced rule's query costs: `python -m benchmarks.isolation`.

Two tables, pure CPU in one process:

1. Ordinary queries: Prometheus' parser alone (promql-parser's parse, the floor of any
   parse-based approach); ``adapter.metricrules.isolation.confine`` on a query it has not seen (measure,
   parse, print, parse again and check); and on one it has (the cache a serving adapter
   hits for every repeated query). Microseconds per query.
2. Queries at the size limits (``adapter.metricrules.query_size.SizeLimits``' defaults): the largest a
   MetricRule may be, in each shape that stresses the parser or the rewrite (the longest
   chain the depth limit lets through, the most tokens, the longest text, the deepest
   nesting). Milliseconds of CPU per query not seen before, against the 50 ms goal, and
   the judge's whole verdict (``team_rules.judge``) for the same rule.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from collections.abc import Callable

import promql_parser as pp

from adapter.metricrules.isolation import confine, confine_query
from adapter.metricrules.query_size import SizeLimits, measure
from adapter.metricrules.team_rules import NAMESPACED, Limits, judge

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
GOAL_MS = 50.0


def at_the_limits(limits: SizeLimits) -> dict[str, str]:
    """The largest query of each shape that the default limits still accept."""

    def largest(make: Callable[[int], str]) -> str:
        n, best = 1, make(1)
        while True:
            q = make(n + 1)
            s = measure(q)
            if s.length > limits.max_length or s.tokens > limits.max_tokens or s.depth > limits.max_depth:
                return best
            n, best = n + 1, q

    def grouped(n: int) -> str:  # sums of 20 rates, joined: many selectors, shallow
        group = "(" + " + ".join(f"rate(m{i}[5m])" for i in range(20)) + ")"
        return " + ".join([group] * n)

    return {
        "longest chain (a+b+...)": largest(lambda n: " + ".join(f"m{i}" for i in range(n))),
        "deepest nesting (abs(abs(...)))": largest(lambda n: "abs(" * n + "m" + ")" * n),
        "most selectors (grouped rates)": largest(grouped),
        "longest text (one long regexp)": largest(lambda n: f'sum(m{{pod=~"{"web-x|" * n}"}})'),
        "widest aggregation (by many labels)": largest(
            lambda n: "sum by (" + ", ".join(f"l{i}" for i in range(n)) + ") (m)"
        ),
        "subqueries in a chain": largest(
            lambda n: " + ".join(f"max_over_time(rate(m{i}[1m])[10m:1m])" for i in range(n))
        ),
    }


def per_query_us(fn: Callable[[], object], number: int, rounds: int) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=rounds)) / number * 1e6


def cpu_ms(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        times.append((time.process_time() - t0) * 1000)
    return max(times)


def _uncached_judge(obj: dict[str, object]) -> object:
    confine_query.cache_clear()  # the whole verdict, as for a rule never seen
    return judge(NAMESPACED, obj, Limits(), time.time())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=2000, help="queries per timing")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    uncached = confine_query.__wrapped__
    print("| query | parse only, µs | confine (not seen), µs | confine (cached), µs | not seen / parse |")
    print("|---|---:|---:|---:|---:|")
    for name, q in QUERIES.items():
        parse = per_query_us(lambda q=q: pp.parse(q), a.number, a.rounds)
        cold = per_query_us(lambda q=q: uncached(q, "team-a"), a.number, a.rounds)
        confine(q, "team-a")
        warm = per_query_us(lambda q=q: confine(q, "team-a"), a.number * 10, a.rounds)
        print(f"| {name} | {parse:.1f} | {cold:.1f} | {warm:.2f} | {cold / parse:.1f}x |")
    print(f"\n(median of {a.rounds} timings of {a.number} queries each; one core)\n")

    limits = SizeLimits()
    print(
        f"At the default size limits ({limits.max_length:,} characters, {limits.max_tokens:,} tokens, "
        f"depth {limits.max_depth}); goal: under {GOAL_MS:g} ms of CPU each\n"
    )
    print("| shape | characters | tokens | depth | parse, ms | confine, ms | judge, ms | goal met |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    rounds = max(3, a.rounds)
    worst = 0.0
    for name, q in at_the_limits(limits).items():
        size = measure(q)
        parse = cpu_ms(lambda q=q: pp.parse(q), rounds)
        cold = cpu_ms(lambda q=q: uncached(q, "team-a"), rounds)
        obj = {"metadata": {"name": "r", "namespace": "team-a"}, "spec": {"metric": "m", "query": q}}
        verdict = judge(NAMESPACED, obj, Limits(), time.time())
        judged = cpu_ms(lambda obj=obj: _uncached_judge(obj), rounds)
        worst = max(worst, cold, judged)
        ok = "yes" if max(cold, judged) < GOAL_MS else "**no**"
        served = "" if type(verdict).__name__ == "TeamRule" else " (refused by a cost limit)"
        print(
            f"| {name}{served} | {size.length:,} | {size.tokens:,} | {size.depth} | {parse:.2f} | "
            f"{cold:.2f} | {judged:.2f} | {ok} |"
        )
    print(f"\n(the slowest of {rounds} runs each, not seen before; one core; worst {worst:.2f} ms)")
    return 0 if worst < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
