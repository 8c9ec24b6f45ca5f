"""kube-controller-manager's command line, as far as it concerns the HPA controller.

A kcm command line (its HPA, klog and leader-election flags) can be reused for
``promhpa-controller run`` as it is: each such flag of kcm v1.37.2 is ours already (the
``--horizontal-pod-autoscaler-*`` family, ``--feature-gates``, ``--emulated-version``,
``--kube-api-qps``/``--kube-api-burst``, ``--leader-elect*``, ``--kubeconfig``), mapped
onto ours here, or accepted and ignored with one warning naming it and why.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

_TRUE = {"1", "t", "T", "true", "TRUE", "True"}
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


@dataclass(frozen=True)
class KcmFlag:
    flag: str
    why: str  # why it is ignored, or what it maps onto


MAPPED = [
    KcmFlag("--v", "klog verbosity: 4 or more is --log-level=debug (unless --log-level is given)"),
    KcmFlag("--logging-format", "text is --log-format=console, json is --log-format=json"),
    KcmFlag("--authentication-kubeconfig", "one kubeconfig (--kubeconfig) serves the API and auth"),
    KcmFlag("--authorization-kubeconfig", "one kubeconfig (--kubeconfig) serves the API and auth"),
    KcmFlag("--leader-elect-resource-lock", "leases is the only lock (and the default); others are refused"),
]
IGNORED = [
    KcmFlag("--vmodule", "structured logs; use --log-level"),
    KcmFlag("--log-flush-frequency", "logs are written at once"),
    KcmFlag("--log-json-info-buffer-size", "logs are written at once"),
    KcmFlag("--log-json-split-stream", "every log line goes to stderr"),
    KcmFlag("--log-text-info-buffer-size", "logs are written at once"),
    KcmFlag("--log-text-split-stream", "every log line goes to stderr"),
    KcmFlag("--kube-api-content-type", "the controller speaks JSON to the API server"),
    KcmFlag("--master", "the API server is the kubeconfig's (--kubeconfig)"),
    KcmFlag("--enable-leader-migration", "promhpa's Lease is its own; there is nothing to migrate"),
    KcmFlag("--leader-migration-config", "promhpa's Lease is its own; there is nothing to migrate"),
]
FLAGS = {f.flag: f for f in MAPPED + IGNORED}


def go_bool(text: str) -> bool:
    """strconv.ParseBool, as pflag reads ``--flag=value`` of a boolean."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def add_flags(p: argparse.ArgumentParser) -> None:
    for f in FLAGS.values():
        p.add_argument(f.flag, dest=_dest(f.flag), default=None, metavar="VALUE", help=argparse.SUPPRESS)


def _dest(flag: str) -> str:
    return "kcm_" + flag.lstrip("-").replace("-", "_")


def translate(a: argparse.Namespace, argv: list[str]) -> tuple[dict[str, object], list[str], list[str]]:
    """What kcm's flags mean in ours: the values to set, by destination (a flag of ours given
    explicitly wins), the warnings to log (one per ignored flag) and the errors (a value
    promhpa cannot honour). ``a`` is read, never changed: the parser's module sets them."""
    overrides: dict[str, object] = {}
    warnings: list[str] = []
    errors: list[str] = []
    explicit = {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}
    values = {f: getattr(a, _dest(f), None) for f in FLAGS}
    if values["--v"] is not None:
        try:
            level = int(values["--v"])
        except ValueError:
            errors.append(f"--v={values['--v']}: a verbosity is a number")
        else:
            if "--log-level" not in explicit:
                overrides["log_level"] = "debug" if level >= 4 else "info"
    if values["--logging-format"] is not None:
        fmt = {"text": "console", "json": "json"}.get(values["--logging-format"])
        if fmt is None:
            errors.append(f"--logging-format={values['--logging-format']}: use text or json")
        elif "--log-format" not in explicit:
            overrides["log_format"] = fmt
    for flag in ("--authentication-kubeconfig", "--authorization-kubeconfig"):
        if values[flag] is not None and not a.kubeconfig and "kubeconfig" not in overrides:
            overrides["kubeconfig"] = values[flag]
    lock = values["--leader-elect-resource-lock"]
    if lock is not None and lock != "leases":
        errors.append(f"--leader-elect-resource-lock={lock}: promhpa's leader election uses leases only")
    for f in IGNORED:
        if values[f.flag] is not None:
            warnings.append(
                f"{f.flag}: accepted for kube-controller-manager compatibility and ignored: {f.why}"
            )
    return overrides, warnings, errors
