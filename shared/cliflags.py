"""Command-line pieces both processes share: value types, and the flags of their runtime
(stopping, informers, the serving certificate), so both spell and check them alike."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
from datetime import timedelta
from typing import Any, TypeVar

from shared.durations import DurationError, parse_duration
from shared.urls import is_http_url

T = TypeVar("T")


def from_flags(cls: type[T], a: argparse.Namespace) -> T:
    """A typed option object (a dataclass whose fields are named as the flags' dests), read
    once at a command's entry so nothing below it sees the Namespace."""
    return cls(**{f.name: getattr(a, f.name) for f in dataclasses.fields(cls)})  # type: ignore[arg-type]


def duration(text: str) -> timedelta:
    """A Go duration ('90s', '5m'): a usage error names what is wrong."""
    try:
        return parse_duration(text)
    except DurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def shown(d: timedelta) -> str:
    """A default duration as a help text writes it, in its largest whole unit: 1h, 5m, 90s."""
    seconds = d.total_seconds()
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, with ``%(default)s`` written as a user writes the flag: a duration in its
    largest whole unit (``shown``), a number without a trailing ``.0``. Help texts name a
    default through it, so the text cannot drift from the definition."""

    def _expand_help(self, action: argparse.Action) -> str:
        default = action.default
        if isinstance(default, timedelta):
            action = copy.copy(action)
            action.default = shown(default)
        elif isinstance(default, float):
            action = copy.copy(action)
            action.default = f"{default:g}"
        return super()._expand_help(action)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that writes defaults as ``HelpFormatter`` does; its subcommands'
    parsers too (``add_subparsers`` makes them of the parent's class)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        kw.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kw)


def http_url(text: str) -> str:
    """An http(s) URL with a host, checked when the flag is read (a usage error, exit 2)."""
    if not is_http_url(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an http(s) URL, e.g. https://127.0.0.1:10258")
    return text


def port(text: str) -> int:
    """A TCP port, 1-65535: a typo is a usage error, not a bind failure at start-up."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (1-65535)")
    return value


def positive(text: str) -> int:
    """A count of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def non_negative(text: str) -> int:
    """A count of 0 or more."""
    return 0 if text.strip() == "0" else positive(text)


def port_or_zero(text: str) -> int:
    """A port, or 0 (off, or any free port: each flag says which)."""
    return 0 if text.strip() == "0" else port(text)


def add_runtime_flags(p: argparse.ArgumentParser, drains: str) -> None:
    """--shutdown-grace-period (``drains``: what finishes within it) and the informers' bounds."""
    p.add_argument(
        "--shutdown-grace-period",
        type=duration,
        default=timedelta(seconds=20),
        help=f"on SIGTERM, how long {drains} (default %(default)s; keep it below the pod's "
        "terminationGracePeriodSeconds, 30s)",
    )
    p.add_argument(
        "--informer-stale-after",
        type=duration,
        default=timedelta(minutes=3),
        help="/readyz fails while a started informer has heard nothing from the API server (no list, "
        "watch or event) for this long (default %(default)s)",
    )
    p.add_argument(
        "--informer-watch-idle-timeout",
        type=duration,
        default=timedelta(seconds=90),
        help="a watch that delivers nothing, not even a bookmark (the API server sends one about "
        "every minute), for this long is re-established (default %(default)s)",
    )


def add_tls_flags(p: argparse.ArgumentParser, cert_dir: str, example_name: str) -> None:
    """The serving certificate: given, or self-signed into --cert-dir."""
    p.add_argument("--tls-cert-file", help="serving certificate (PEM); self-signed in --cert-dir if omitted")
    p.add_argument("--tls-private-key-file", help="the serving certificate's key (PEM)")
    p.add_argument(
        "--cert-dir",
        default=cert_dir,
        help="where the self-signed certificate goes when none is given (default %(default)s)",
    )
    p.add_argument(
        "--cert-dns-name",
        action="append",
        default=[],
        help=f"DNS name for the self-signed certificate, e.g. {example_name} (repeatable)",
    )


LOG_LEVELS = ("debug", "info", "warning", "error")


def add_log_flags(p: argparse.ArgumentParser) -> None:
    """--log-format and --log-level, alike in both programs."""
    p.add_argument(
        "--log-format",
        choices=("json", "console"),
        default="json",
        help="json (one object a line, for log pipelines) or console (default %(default)s)",
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="least severe level logged (default %(default)s)",
    )


def add_kubectl_flags(p: argparse.ArgumentParser) -> None:
    """kubectl's own flags, spelled as kubectl spells them, for a command that reads the
    cluster: ``-n/--namespace`` (the HPA may then be given as NAME) and ``--context`` (a
    context of the kubeconfig other than its current one)."""
    p.add_argument(
        "-n", "--namespace", help="the HPA's namespace, as kubectl's -n (then give the HPA as NAME)"
    )
    p.add_argument("--context", help="the kubeconfig context to use (default: its current-context)")


def apply_kubectl_flags(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``--context`` made the kubeconfig's, and the HPA argument with ``-n`` folded in (None:
    the command takes none), or the usage error to report."""
    from shared.kube.client import use_context

    if getattr(args, "context", None):
        use_context(args.context)
    namespace = getattr(args, "namespace", None)
    hpa = getattr(args, "hpa", None)
    if namespace and hpa:
        ns, slash, name = hpa.rpartition("/")
        if slash and ns != namespace:
            return None, f"the HPA {hpa} names namespace {ns!r}, but -n says {namespace!r}: give one of them"
        return f"{namespace}/{name}", None
    return hpa, None


def deprecated_alias(canonical: str, old: str, *, store_true: bool = False) -> type[argparse.Action]:
    """An argparse action for an option spelled ``canonical`` that still takes ``old`` (one
    spelling per concept across the commands; docs/cli.md): the old spelling works and
    says once, on stderr, which to write instead."""
    base: type[argparse.Action] = argparse._StoreTrueAction if store_true else argparse._StoreAction

    class Alias(base):  # type: ignore[misc, valid-type]
        def __call__(
            self, parser: Any, namespace: Any, values: Any, option_string: str | None = None
        ) -> None:
            if option_string == old and not getattr(namespace, f"_warned_{self.dest}", False):
                print(f"warning: {old} is deprecated: write {canonical}", file=sys.stderr)
                setattr(namespace, f"_warned_{self.dest}", True)
            super().__call__(parser, namespace, values, option_string)

    return Alias


def add_renamed(p: argparse.ArgumentParser, canonical: str, old: str, default: str, help: str) -> None:
    """A string option spelled ``canonical``, still taken under its old spelling ``old``
    (``deprecated_alias``); stored under the old spelling's name, which readers use."""
    dest = old.lstrip("-").replace("-", "_")
    p.add_argument(
        canonical, old, dest=dest, action=deprecated_alias(canonical, old), default=default, help=help
    )


def byte_size(text: str) -> int:
    """A size as a Kubernetes quantity ('16Mi', '64Mi', '100M') or plain bytes."""
    from shared.quantity import Quantity, QuantityError

    try:
        value = Quantity.parse(text).int_value()
    except QuantityError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size of at least one byte")
    return value


def add_input_size_flag(p: argparse.ArgumentParser) -> None:
    """``--max-input-size``: the bound on every file and stream the command reads
    (``shared.inputfiles``); applied by ``apply_input_size``."""
    from shared.inputfiles import Limits

    default = Limits().max_bytes
    p.add_argument(
        "--max-input-size",
        type=byte_size,
        default=default,
        metavar="SIZE",
        help=f"refuse any input file or stream larger than this (default {default // 2**20}Mi; "
        "e.g. 64Mi for a snapshot of a very large HPA)",
    )


def apply_input_size(args: argparse.Namespace) -> None:
    from shared import inputfiles

    size = getattr(args, "max_input_size", None)
    if size:
        inputfiles.set_max_bytes(size)
