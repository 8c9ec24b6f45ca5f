"""``python -m adapter`` / ``promhpa-adapter``: serve the metrics APIs from Prometheus, or
``check-config`` a rule file. Flags are ``adapter.commandline.flags``'; serving is ``adapter.server``'."""

from __future__ import annotations

if __name__ == "__main__":  # python -m adapter: SIGTERM handled first, then this module again
    from shared.entry import adapter

    adapter()

import asyncio
import sys
from collections.abc import Sequence

import structlog

from adapter.admission.check_config import check_config
from adapter.admission.check_metricrules import check_manifests, manifests
from adapter.commandline.options import OptionsError, parse_check, parse_serve
from adapter.metricrules.team_rules import Limits
from promclient.backends import Backends, backend_factory
from promclient.prometheus import Prometheus
from rules.config import ConfigError, parse_config
from shared import eventloop, exitcodes, inputfiles
from shared.gcpolicy import pause_collection, resume_collection
from shared.kube.client import Kube
from shared.kube.client import load as load_kube
from shared.kube.discovery import served_resources
from shared.kube.errors import KubeError
from shared.logging import configure

from .server import serve


def _served_resources(kubeconfig: str) -> dict[str, set[str]] | int:
    """The cluster's resources for check-config, or the exit code after saying why."""
    try:
        kube = Kube(load_kube(kubeconfig))
    except KubeError as e:
        print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    try:
        served, failed = asyncio.run(_read_served(kube))
    except KubeError as e:
        print(f"error: cannot read the cluster's resources with {kubeconfig}: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    for gv in failed:
        print(f"note: {gv} did not answer discovery; its resources count as absent", file=sys.stderr)
    return served


async def _read_served(kube: Kube) -> tuple[dict[str, set[str]], list[str]]:
    try:
        return await served_resources(kube)
    finally:
        await kube.aclose()


def check(args: list[str]) -> int:
    try:
        return _check(args)
    except inputfiles.InputError as e:  # the rule file, or a file a flag names (a CA bundle, ...)
        print(f"error: {e}", file=sys.stderr)
        return 2


def _check(args: list[str]) -> int:
    try:
        c = parse_check(args)
    except (ValueError, OSError) as e:  # a flag that parses but cannot be used, named
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = inputfiles.read_text(c.config)  # read once, bounded (standard input is a stream)
    source = inputfiles.source_name(c.config)
    found = manifests(text, source)
    if found is not None:
        limits = Limits(backends=c.team_backends, size=c.team_size, cost=c.team_cost)
        return asyncio.run(check_manifests(source, found, limits, c.judge_timeout, c.output))
    served = None
    if c.kubeconfig:
        found_served = _served_resources(c.kubeconfig)
        if isinstance(found_served, int):
            return found_served
        served = found_served
    prom: Backends | None = None
    if c.prometheus is not None:
        base = c.prometheus
        try:
            specs = parse_config(text, source).backends
        except (ConfigError, ValueError):
            specs = ()  # check_config reports it, with file and line
        try:
            default = Prometheus(base, cache_ttl=0)
        except ValueError as e:  # e.g. --prometheus-sigv4-region without botocore
            print(f"error: {e}", file=sys.stderr)
            return 2
        try:
            prom = Backends(default, backend_factory(base, 0), specs)
        except (OSError, ValueError):  # a backend's file or library missing: validate names it
            prom = Backends(default, backend_factory(base, 0), ())
    return asyncio.run(check_config(source, prom, c.max_age, served, text, c.output))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "check-config":
        return check(args[1:])
    if args and args[0] == "serve":
        args = args[1:]
    try:
        options = parse_serve(args)
    except OptionsError as e:
        configure(json=e.log.json, level=e.log.level)
        structlog.get_logger("adapter").error(str(e), **e.context)
        return 2
    pause_collection()  # until serving freezes the start-up heap (shared.gcpolicy)
    try:
        return eventloop.run(serve(options))
    except (ConfigError, eventloop.EventLoopError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    finally:
        resume_collection()
