"""Every flag the built prometheus-adapter v0.12.0 prints in ``--help`` is accepted by
promhpa's adapter: mapped onto ours, or ignored with a warning that names it."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from adapter.commandline import compat
from adapter.commandline.flags import serve_parser
from localcluster.tools import Binaries
from localcluster.tools import cache_bin
from tests.support import missing

pytestmark = [pytest.mark.tools]
# value by pflag type, for the flags whose type says enough
SAMPLES = {
    "duration": "1m",
    "int": "3",
    "float32": "5",
    "string": "x",
    "strings": "a",
    "stringArray": "X-Scope-OrgID=tenant",
    "ip": "127.0.0.1",
    "Level": "2",
    "moduleSpec": "x=2",
    "namedCertKey": "a.crt,a.key",
}
SPECIFIC = {
    "--prometheus-verb": "POST",
    "--tls-min-version": "VersionTLS12",
    "--tls-cipher-suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "--prometheus-url": "http://127.0.0.1:9090",
    "--secure-port": "6443",
}
_FLAG = re.compile(r"^\s+(?:-(\w), )?--([a-z0-9-]+)(?: (\w+))?")


def their_flags() -> list[tuple[str, str | None]]:
    binary = Path(Binaries(cache_bin()).prometheus_adapter)
    if not binary.exists():
        missing(f"prometheus-adapter is not built at {binary}: run `make cluster-tools`")
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30, check=False)
    flags = []
    for line in (out.stdout + out.stderr).splitlines():
        m = _FLAG.match(line)
        if m:
            kind = m.group(3) if m.group(3) in SAMPLES else None  # None: a boolean ("If", "Enable", ...)
            flags.append((f"--{m.group(2)}", kind))
    return flags


def ours(argv: list[str]) -> tuple[argparse.Namespace, list[str], list[compat.Ignored]]:
    kept, aside = compat.split_unknown(argv)
    a = serve_parser().parse_args(kept)
    overrides, errors, ignored = compat.translate(a, kept, aside)
    vars(a).update(overrides)
    return a, errors, ignored


def test_their_help_lists_the_flags_we_expect() -> None:
    names = {f for f, _ in their_flags()}
    assert len(names) > 70
    assert {"--client-qps", "--client-burst", "--discovery-interval", "--metrics-relist-interval"} <= names


def test_every_prometheus_adapter_flag_is_mapped_or_ignored_with_a_warning() -> None:
    own = {o for a in serve_parser()._actions for o in a.option_strings}
    unaccepted = []
    for flag, kind in their_flags():
        value = SPECIFIC.get(flag) or (SAMPLES[kind] if kind else "true")
        argv = [f"{flag}={value}"] + (
            ["--prometheus-url=http://127.0.0.1:9090"] if flag != "--prometheus-url" else []
        )
        try:
            _, errors, ignored = ours(argv)
        except SystemExit:
            unaccepted.append(f"{flag}={value}: refused")
            continue
        if errors:
            unaccepted.append(f"{flag}={value}: {errors}")
            continue
        mapped = flag in own and flag not in compat.COMPAT
        warned = any(flag in f.get("flag", "") + f.get("argument", "") for _, f in ignored)
        if not (mapped or (flag in compat.COMPAT and compat.COMPAT[flag].target) or warned):
            unaccepted.append(f"{flag}: accepted silently, neither mapped nor warned about")
    assert unaccepted == []
