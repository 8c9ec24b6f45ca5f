"""``python -m controller replay``: last week's traffic through the exact algorithm.

    python -m controller replay hpa.yaml --prometheus-url=http://prometheus:9090 \\
        --config=adapter-rules.yaml --from=-7d --to=now \\
        --set behavior.scaleDown.stabilizationWindowSeconds=60 --plot=replay.png
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from controller.commands.why import add_kind_flag
from controller.engine.hpa_validation import validate_hpa
from controller.engine.knobs import OWN_API_VERSION
from controller.engine.model import Settings
from controller.replay.inputs import live_requests, load_hpa, server_version
from controller.replay.report import as_csv, as_json, summarize, table
from controller.replay.simulate import Outcome, Step
from controller.replay.variants import assignment_of, moment, replay, requests_of, set_path
from promclient.auth_flags import auth_flags, auth_settings
from shared import exitcodes
from shared.cliflags import add_input_size_flag, add_kubectl_flags
from shared.durations import parse_duration

from .common import DecisionFlags


def add_parser(sub: Any, live_flags: Any) -> None:
    r = sub.add_parser(
        "replay",
        help="replay recorded metrics through the engine in a closed loop; compare HPA specs",
        description=__doc__.splitlines()[0],
    )
    r.add_argument("hpa", help="an HPA YAML file, or NAMESPACE/NAME read live (--kubeconfig)")
    add_kind_flag(r)
    r.add_argument("--prometheus-url", required=True, help="the Prometheus holding the recorded history")
    auth_flags(r)  # the adapter's own: a managed Prometheus' credentials work here too
    r.add_argument("--config", required=True, help="the adapter's rule file (names resolve to its PromQL)")
    r.add_argument(
        "--from", dest="start", default="-1d", help="now, -7d, -90m or RFC 3339 (default %(default)s)"
    )
    r.add_argument(
        "--to", dest="end", default="now", help="end of the history: now (default), -1h or RFC 3339"
    )
    r.add_argument("--step", type=parse_duration, default=None, help="default: the sync period")
    r.add_argument("--spec-b", help="a second HPA YAML to replay over the same history")
    r.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="a variant B of the spec, e.g. behavior.scaleDown.stabilizationWindowSeconds=60 (repeatable)",
    )
    r.add_argument("--pod-startup", type=parse_duration, default=None,
                   help="how long a new pod takes to become ready (default: the median in the "
                   "history, from kube-state-metrics, else 30s)")  # fmt: skip
    r.add_argument("--pod-regex", help="names of the workload's pods (default: <target>-<hash>-<id>)")
    r.add_argument("--real-replicas-query", help="PromQL for the real replica count "
                   "(default: kube-state-metrics' kube_deployment_status_replicas)")  # fmt: skip
    r.add_argument("--requests", default="", metavar="cpu=100m,memory=128Mi",
                   help="container requests, for Resource utilization targets")  # fmt: skip
    r.add_argument("--initial-replicas", type=int, default=None,
                   help="replicas at the start (default: the recorded count, or minReplicas)")  # fmt: skip
    r.add_argument(
        "--prometheus-timeout",
        type=parse_duration,
        default=timedelta(seconds=60),
        help="per range query (default %(default)s)",
    )
    r.add_argument(
        "-o",
        "--output",
        choices=("text", "csv", "json", "yaml"),
        type=lambda t: "text" if t == "table" else t,
        default="text",
        help="text (a table, the default), csv, json or yaml",
    )
    r.add_argument("--plot", type=Path, help="draw the replay into this PNG or SVG file")
    t = r.add_argument_group("tuning (--tune) and the pull-request gate (--check)")
    t.add_argument("--tune", action="store_true",
                   help="search target values, tolerance, stabilization windows and rate policies for "
                   "the fewest pod-hours within --max-minutes-above-target; print the recommended spec "
                   "as a diff")  # fmt: skip
    t.add_argument("--max-minutes-above-target", type=float, default=None, metavar="MINUTES",
                   help="--tune's bound: minutes with the load per pod above today's target (default: "
                   "today's spec's own)")  # fmt: skip
    t.add_argument("--tune-budget", type=int, default=80, metavar="N",
                   help="--tune replays at most N candidate specs (default %(default)s): "
                   "the time bound")  # fmt: skip
    t.add_argument("--tune-seed", type=int, default=1, help="--tune's random seed (default %(default)s)")
    t.add_argument("--check", action="store_true",
                   help="exit 1 when variant B (--spec-b or --set) is worse than today's spec beyond "
                   "--check-pod-hours or --check-minutes-above")  # fmt: skip
    t.add_argument("--check-pod-hours", type=float, default=0.0, metavar="PERCENT",
                   help="--check: allowed increase in pod-hours, in percent "
                   "(default %(default)s)")  # fmt: skip
    t.add_argument("--check-minutes-above", type=float, default=0.0, metavar="MINUTES",
                   help="--check: allowed increase in minutes above today's target "
                   "(default %(default)s)")  # fmt: skip
    live_flags(r)
    add_kubectl_flags(r)
    add_input_size_flag(r)
    r.set_defaults(func=lambda a: cmd_replay(a, DecisionFlags.of(a).settings))


def cmd_replay(a: argparse.Namespace, settings_for: Callable[[str | None], Settings]) -> int:
    """``settings_for`` gives the flags' settings for a server version: a replay of a live
    HPA decides as that cluster's release unless --emulated-version says otherwise; of a
    file, as --emulated-version or the newest supported release."""
    from controller.replay.record import (
        RecordError,
        default_pod_regex,
        pod_startup,
        prometheus,
        record,
        rules,
    )
    from shared.kube.errors import KubeError

    try:
        # what can be checked without the cluster or Prometheus, first
        now = datetime.now(UTC)
        start, end = moment(a.start, now), moment(a.end, now)
        if end <= start:
            raise ValueError(f"--from {a.start} is not before --to {a.end}")
        for assignment in a.set:
            assignment_of(assignment)  # checked before the cluster or Prometheus is read
        if a.check and not (a.spec_b or a.set):
            raise ValueError(
                "--check compares a change with today's spec: give the change as --spec-b or --set"
            )
        if a.tune and (a.spec_b or a.set or a.check):
            raise ValueError("--tune searches its own variants: it takes no --spec-b, --set or --check")
        stdin = [
            name for name, v in (("HPA", a.hpa), ("--spec-b", a.spec_b), ("--config", a.config)) if v == "-"
        ]
        if len(stdin) > 1:
            raise ValueError(
                f"{' and '.join(stdin)} both read standard input (-): give one of them as a file"
            )
        if a.tune_budget < 1:
            raise ValueError(f"--tune-budget must be at least 1, not {a.tune_budget}")
        if a.step is not None and a.step <= timedelta(0):
            raise ValueError(f"--step must be longer than 0s, not {a.step.total_seconds():g}s")
        if a.plot is not None and a.plot.suffix.lower() not in (".png", ".svg"):
            raise ValueError(f"--plot {a.plot}: draws PNG or SVG; name the file .png or .svg")
        requests_of(a.requests)
        hpa = load_hpa(a.hpa, a.kubeconfig, a.kind)
        variants: dict[str, dict[str, Any]] = {"A": hpa}
        if a.spec_b or a.set:
            b = load_hpa(a.spec_b, a.kubeconfig, a.kind) if a.spec_b else copy.deepcopy(hpa)
            for assignment in a.set:
                b = {**b, "spec": set_path(b.get("spec") or {}, assignment)}
            variants["B"] = b
        from_file = a.hpa == "-" or Path(a.hpa).exists()
        live = not from_file and not a.emulated_version
        settings = settings_for(server_version(a.kubeconfig) if live else None)
        gates = settings.feature_gates  # what the release decided as refuses, it refuses too
        problems = [
            f"{name}: {p}"
            for name, h in variants.items()
            # promhpa's own kind takes minReplicas 0 whatever the gates (controller.engine.knobs)
            for p in validate_hpa(
                h,
                gates.hpa_scale_to_zero or h.get("apiVersion") == OWN_API_VERSION,
                gates.hpa_configurable_tolerance,
            )
        ]
        if problems:
            raise ValueError(
                "the API server would refuse this HPA, so it is not replayed:\n  " + "\n  ".join(problems)
            )
        config = rules(a.config)
        requests = requests_of(a.requests)
        if not requests and not from_file:
            requests = live_requests(hpa, a.kubeconfig)
    except (ValueError, OSError, RecordError, argparse.ArgumentTypeError, KubeError) as e:
        print(f"error: {e}", file=sys.stderr)
        # the cluster refusing or not answering is a failure at run time (1), a kubeconfig
        # or a file that cannot be used is the input's (2): docs/cli.md's table
        return exitcodes.for_error(e) if isinstance(e, KubeError) else 2
    step = a.step or a.horizontal_pod_autoscaler_sync_period
    try:
        prom = prometheus(a.prometheus_url, a.prometheus_timeout.total_seconds(), **auth_settings(a))
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    startup = a.pod_startup
    try:
        steps = asyncio.run(record(hpa, config, prom, start, end, step, a.pod_regex, a.real_replicas_query))
        if startup is None:
            meta, target = hpa.get("metadata") or {}, hpa["spec"]["scaleTargetRef"]["name"]
            regex = a.pod_regex or default_pod_regex(target)
            seen = asyncio.run(pod_startup(prom, meta.get("namespace", "default"), regex, start, end))
            startup = seen[0] if seen else timedelta(seconds=30)
            how = (
                f"the median of {seen[1]} pods in the history"
                if seen
                else "the default (no kube-state-metrics)"
            )
            print(f"pod startup: {startup.total_seconds():g}s, {how}", file=sys.stderr)
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # Prometheus down, refused the query, ...
        print(f"error: reading history from {a.prometheus_url}: {e}", file=sys.stderr)
        return 1
    finally:
        prom.close()
    if a.tune:
        return _tune(
            hpa, steps, settings, startup, requests, step, initial_replicas=a.initial_replicas,
            budget=a.tune_budget, seed=a.tune_seed, max_minutes_above=a.max_minutes_above_target,
            plot=a.plot,
        )  # fmt: skip
    results = {
        name: replay(h, steps, settings, startup, requests, a.initial_replicas)
        for name, h in variants.items()
    }
    if a.check:
        return _check(
            results,
            variants,
            step,
            pod_hours_pct=a.check_pod_hours,
            allowed_minutes_above=a.check_minutes_above,
        )
    summaries = [
        summarize(name, out, step, int((variants[name].get("spec") or {}).get("maxReplicas", 0)))
        for name, out in results.items()
    ]
    if a.output == "csv":
        print(as_csv(results), end="")
    elif a.output == "json":
        print(as_json(results, summaries))
    elif a.output == "yaml":
        print(yaml.safe_dump(json.loads(as_json(results, summaries)), sort_keys=False), end="")
    else:
        meta = hpa.get("metadata") or {}
        print(f"replay of {meta.get('namespace')}/{meta.get('name')}: {len(steps)} syncs of {step}, "
              f"{start:%Y-%m-%d %H:%M:%S} .. {end:%Y-%m-%d %H:%M:%S} UTC")  # fmt: skip
        if "B" in variants:
            print("variant B: " + (a.spec_b or ", ".join(a.set)))
        print(table(summaries))
    return _picture(a.plot, results, f"replay of {hpa['metadata'].get('name')}") if a.plot else 0


def _picture(path: Path, runs: dict[str, list[Outcome]], title: str) -> int:
    """Draw ``runs`` into ``path``: 0, or 1 with the reason when the picture cannot be drawn."""
    from controller.replay.plot import PlotUnavailableError, plot

    try:
        plot(runs, path, title)
    except PlotUnavailableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"picture: {path}", file=sys.stderr)
    return 0


def _tune(
    hpa: dict[str, Any], steps: list[Step], settings: Settings, startup: timedelta,
    requests: dict[str, str], step: timedelta, *, initial_replicas: int | None, budget: int, seed: int,
    max_minutes_above: float | None, plot: Path | None,
) -> int:  # fmt: skip
    """``--tune``: the search (``tune.tune``), its diff, table and picture."""
    import time

    from controller.replay.tune import spec_diff, tune, tuned_table

    began = time.monotonic()
    t = tune(
        hpa,
        lambda h: replay(h, steps, settings, startup, requests, initial_replicas),
        step,
        budget=budget,
        seed=seed,
        max_minutes_above=max_minutes_above,
        tolerance_field=settings.feature_gates.hpa_configurable_tolerance,
    )
    meta = hpa.get("metadata") or {}
    print(f"tuning {meta.get('namespace')}/{meta.get('name')} over {len(steps)} syncs of {step}: "
          f"{t.evaluated} specs replayed in {time.monotonic() - began:.1f}s (seed {seed}), "
          f"at most {t.bound:g} minutes above today's target")  # fmt: skip
    print(spec_diff(hpa.get("spec") or {}, t.best.spec), end="")
    print(tuned_table(t))
    if t.best.above > t.bound:
        print(f"no spec within {t.bound:g} minutes above today's target: the one shown comes closest",
              file=sys.stderr)  # fmt: skip
    if not plot:
        return 0
    runs = {
        "current": replay(hpa, steps, settings, startup, requests, initial_replicas),
        "recommended": replay(
            {**hpa, "spec": t.best.spec}, steps, settings, startup, requests, initial_replicas
        ),
    }
    return _picture(plot, runs, f"tuning {meta.get('name')}")


def _check(
    results: dict[str, list[Outcome]], variants: dict[str, dict[str, Any]], step: timedelta, *,
    pod_hours_pct: float, allowed_minutes_above: float,
) -> int:  # fmt: skip
    """``--check``: exit 1 when B is worse than A beyond the thresholds."""
    from controller.replay.tune import check, first_target, minutes_above

    spec = variants["A"].get("spec") or {}
    goal, top = first_target(spec), int(spec.get("maxReplicas", 0))
    sa, sb = (summarize(n, results[n], step, top) for n in ("A", "B"))
    v = check(sa, sb, minutes_above(results["A"], goal, step), minutes_above(results["B"], goal, step),
              pod_hours_pct=pod_hours_pct, minutes_above=allowed_minutes_above)  # fmt: skip
    print("\n".join(v.lines))
    if v.worse:
        print("WORSE: " + "; ".join(v.worse))
        return 1
    print("OK: the change is no worse than today's spec")
    return 0
