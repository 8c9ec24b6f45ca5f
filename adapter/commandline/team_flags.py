"""The flags that bound what one namespace's MetricRules may cost: the adapter's and
``check-config``'s, so a manifest is judged offline with the limits it meets when served."""

from __future__ import annotations

import argparse
from datetime import timedelta

from adapter.metricrules.query_cost import CostLimits
from adapter.metricrules.query_size import CEILING, SizeLimits
from shared.cliflags import duration, positive


def team_limit_flags(team: argparse._ArgumentGroup) -> None:
    """What one namespace's MetricRules may cost the adapter and the shared Prometheus
    (docs/rules.md, "Limits"). Each default is ``adapter.metricrules.query_size``'s or ``query_cost``'s."""
    size, cost = SizeLimits(), CostLimits()
    team.add_argument(
        "--team-rule-max-query-length",
        type=positive,
        default=size.max_length,
        metavar="N",
        help="characters a MetricRule's query may have; a longer one is Invalid (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-max-query-depth",
        type=positive,
        default=size.max_depth,
        metavar="N",
        help="how deeply a MetricRule's query may nest (brackets and chained operators), measured "
        f"before parsing; at most {CEILING.max_depth} (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-max-query-tokens",
        type=positive,
        default=size.max_tokens,
        metavar="N",
        help="tokens a MetricRule's query may have, measured before parsing (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-max-range",
        type=duration,
        metavar="DURATION",
        default=cost.max_range,
        help="the longest window ([...], or a subquery's range) a MetricRule's query may use "
        "(default %(default)s)",
    )
    team.add_argument(
        "--team-rule-max-lookback",
        type=duration,
        metavar="DURATION",
        default=cost.max_lookback,
        help="how far before now a MetricRule's query may read: windows, offsets and @ together "
        "(default %(default)s)",
    )
    team.add_argument(
        "--team-rule-min-subquery-step",
        type=duration,
        metavar="DURATION",
        default=cost.min_subquery_step,
        help="the smallest step a MetricRule's subquery may give (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-max-series",
        type=positive,
        default=cost.max_series,
        metavar="N",
        help="series one answer to a MetricRule's query may carry; a larger answer is refused "
        "(422), never truncated (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-max-concurrent-queries",
        type=positive,
        default=cost.max_concurrent,
        metavar="N",
        help="a namespace's MetricRule queries sent to Prometheus at once; more wait, within "
        "--team-rule-query-timeout (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-queries-per-second",
        type=float,
        default=cost.queries_per_second,
        metavar="R",
        help="a namespace's MetricRule queries sent per second (answers from the query cache do "
        "not count); over it, 429 with Retry-After; 0 disables (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-query-burst",
        type=positive,
        default=cost.burst,
        metavar="N",
        help="how many queries a namespace may send at once above its rate (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-judge-workers",
        type=positive,
        default=None,
        metavar="N",
        help="worker processes that parse and check MetricRules, so a hostile query cannot stall "
        "or crash serving (default: one per core beyond the first, at most 2)",
    )
    team.add_argument(
        "--team-rule-judge-timeout",
        type=duration,
        metavar="DURATION",
        default=timedelta(seconds=2),
        help="how long judging one MetricRule may take; past it the rule is Invalid and its "
        "worker replaced (default %(default)s)",
    )


def team_limits(a: argparse.Namespace) -> tuple[SizeLimits, CostLimits]:
    """The team rules' limits from the command line; a depth past what the parser survives
    is refused (StartupError in ``server``)."""
    size = SizeLimits(a.team_rule_max_query_length, a.team_rule_max_query_tokens, a.team_rule_max_query_depth)
    for flag, value, ceiling in (
        ("--team-rule-max-query-length", size.max_length, CEILING.max_length),
        ("--team-rule-max-query-tokens", size.max_tokens, CEILING.max_tokens),
        ("--team-rule-max-query-depth", size.max_depth, CEILING.max_depth),
    ):
        if value > ceiling:
            raise ValueError(
                f"{flag}={value} is over {ceiling}, past which the PromQL parser itself is unsafe "
                "(docs/security.md)"
            )
    cost = CostLimits(
        a.team_rule_max_range,
        a.team_rule_max_lookback,
        a.team_rule_min_subquery_step,
        a.team_rule_max_series,
        a.team_rule_max_concurrent_queries,
        a.team_rule_queries_per_second,
        a.team_rule_query_burst,
    )
    return size, cost
