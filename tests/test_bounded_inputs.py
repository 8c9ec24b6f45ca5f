"""Every reader of a file or stream, fed each category of hostile input, ends in one error
line and exit 2 within its resource bounds -- the bounded loader's promise (shared/inputfiles).

The suite grows by category, not by case: ``READERS`` lists each command that reads a
file (snapshots, HPA files, rule files, MetricRule manifests, kubeconfigs, CA bundles,
standard input), ``CATEGORIES`` each kind of hostile input, and every pair runs. A new
reader is covered by adding one line to ``READERS``.

Each command runs as users run it, in a child process, measured with ``wait4``: its peak
memory is asserted, and its CPU is bounded by RLIMIT_CPU (a run over the bound is killed
by the kernel, which fails the case): 200 MB and 5 s of CPU for inputs of at most 1 MB,
500 MB and 30 s for the 50 MB ones, which the loader refuses before reading past its limit.
Nothing is stubbed; the only servers named are closed ports on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shared.test_entry import HPA
from tests.shared.test_entry import RULES
from tests.test_broken_inputs import kubeconfig

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
REFUSING = "http://127.0.0.1:1"
SNAPSHOT = (ROOT / "docs" / "examples" / "01-cpu-scale-up-with-warming-pod.yaml").read_text()
METRICRULE = """\
apiVersion: promhpa.io/v1alpha1
kind: MetricRule
metadata: {name: orders-waiting, namespace: shop}
spec: {metric: orders_waiting, query: 'sum(jobs_waiting{queue="orders"})'}
"""
KUBECONFIG = kubeconfig("https://127.0.0.1:1")
MB = 2**20


@dataclass(frozen=True)
class Reader:
    """One command reading one kind of input: ``argv`` with ``{}`` where the path goes
    (``-`` and the input on stdin when ``stdin``); ``base`` a valid document of its kind
    (None: not YAML, a PEM file)."""

    name: str
    argv: tuple[str, ...]
    base: str | None
    stdin: bool = False

    def command(self, path: str, files: dict[str, str]) -> list[str]:
        return [a.format(path, **files) for a in self.argv]


READERS = (
    Reader("decide SNAPSHOT", ("controller", "decide", "{}"), SNAPSHOT),
    Reader("decide - (stdin)", ("controller", "decide", "-"), SNAPSHOT, stdin=True),
    Reader(
        "replay HPA-FILE",
        ("controller", "replay", "{}", f"--prometheus-url={REFUSING}", "--config={rules}"),
        HPA,
    ),
    Reader(
        "replay --config",
        ("controller", "replay", "{hpa}", f"--prometheus-url={REFUSING}", "--config={}"),
        RULES,
    ),
    Reader("check-config RULES", ("adapter", "check-config", "{}"), RULES),
    Reader("check-config - (stdin)", ("adapter", "check-config", "-"), RULES, stdin=True),
    Reader("check-config METRICRULES", ("adapter", "check-config", "{}"), METRICRULE),
    Reader("why --kubeconfig", ("controller", "why", "a/b", "--kubeconfig={}"), KUBECONFIG),
    Reader(
        "check-config --kubeconfig", ("adapter", "check-config", "{rules}", "--kubeconfig={}"), KUBECONFIG
    ),
    Reader("run --kubeconfig", ("controller", "run", "--kubeconfig={}"), KUBECONFIG),
    Reader(
        "check-config --prometheus-ca-file",
        ("adapter", "check-config", "{rules}", f"--prometheus-url={REFUSING}", "--prometheus-ca-file={}"),
        None,
    ),
    Reader(
        "why --controller-ca-file",
        ("controller", "why", "a/b", "--controller-url=https://127.0.0.1:1", "--controller-ca-file={}"),
        None,
    ),
)


def _laughs(levels: int = 9) -> str:
    """A billion laughs in flow style: nine anchors of ten aliases each (10^9 nodes)."""
    parts = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    parts += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "{" + ", ".join(parts) + "}"


def _nested(doc: Any, level: int, value: Any) -> Any:
    """``doc`` with ``bomb: value`` added ``level`` mappings down (through the first mapping,
    or the first mapping in a list, at each level)."""
    if level == 0 or not isinstance(doc, dict):
        return {**doc, "bomb": value} if isinstance(doc, dict) else {"bomb": value}
    for k, v in doc.items():
        if isinstance(v, dict):
            return {**doc, k: _nested(v, level - 1, value)}
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return {**doc, k: [_nested(v[0], level - 1, value), *v[1:]]}
    return {**doc, "bomb": value}


def _with(base: str, level: int, text: str) -> str:
    """``base`` as YAML with ``text`` written verbatim where the placeholder was."""
    doc = yaml.safe_load(base)
    return yaml.safe_dump(_nested(doc, level, "__HERE__"), sort_keys=False).replace("__HERE__", text)


def _json_with(base: str, level: int, text: str) -> str:
    doc = yaml.safe_load(base)
    return json.dumps(_nested(doc, level, "__HERE__")).replace('"__HERE__"', text)


DEEP = "[" * 10_000 + "]" * 10_000


# category -> case name -> (what the file holds, given the reader's base document), or a path
def yaml_cases(base: str) -> dict[str, Callable[[], bytes | str]]:
    cases: dict[str, Callable[[], bytes | str]] = {}
    for level in range(4):
        cases[f"aliases, level {level}"] = lambda lv=level: _with(base, lv, _laughs())  # type: ignore[misc]
    cases["depth 10,000, level 0"] = lambda: _with(base, 0, DEEP)
    cases["depth 10,000, level 2"] = lambda: _with(base, 2, DEEP)
    cases["depth 10,000, JSON"] = lambda: _json_with(base, 1, DEEP)
    cases["number 1.0e+999"] = lambda: _with(base, 1, "1.0e+999")
    cases["number 10^30"] = lambda: _with(base, 1, "1" + "0" * 30)
    cases["size 50 MB"] = lambda: "big"
    cases["not a file: a directory"] = lambda: "dir"
    cases["not a file: /dev/zero"] = lambda: "zero"
    cases["not a file: missing"] = lambda: "missing"
    cases["encoding UTF-16"] = lambda: base.encode("utf-16")
    cases["encoding latin-1"] = lambda: ("# caf\u00e9\n" + base).encode("latin-1")
    cases["encoding binary"] = lambda: bytes(range(256)) * 16
    return cases


def pem_cases() -> dict[str, Callable[[], bytes | str]]:
    return {
        "not PEM": lambda: "not a certificate\n",
        "PEM without a certificate": lambda: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        "size 50 MB": lambda: "big",
        "not a file: a directory": lambda: "dir",
        "not a file: /dev/zero": lambda: "zero",
        "not a file: missing": lambda: "missing",
        "encoding UTF-16": lambda: "-----BEGIN CERTIFICATE-----\n".encode("utf-16"),
        "encoding binary": lambda: bytes(range(256)) * 16,
    }


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    max_rss_mb: float
    cpu_s: float


# The command runs under a small launcher that reports its child's rusage: a child forked
# straight from pytest starts with pytest's own peak RSS as its ru_maxrss (the kernel keeps
# the high-water mark of the address space a process exec'd from), which in a full run is
# near 300 MB before the command has read a byte.
LAUNCHER = """
import json, resource, subprocess, sys
done = subprocess.run([sys.executable, *sys.argv[2:]])
use = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    json.dump([use.ru_maxrss, use.ru_utime + use.ru_stime], f)
sys.exit(done.returncode if done.returncode >= 0 else 128 - done.returncode)
"""


def run(argv: list[str], stdin_path: str | None, cpu_limit: int, wall: float = 120) -> Run:
    """One command in a child: its exit code, output, peak RSS and CPU."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 1))
        # a guard for the machine, far above the asserted peaks: should a bound ever be lost,
        # three billion-laughs runs at once must not take 24 GB
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))

    with tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "usage.json")
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            done = subprocess.run(
                [sys.executable, "-c", LAUNCHER, report, "-m", *argv], stdin=stdin, capture_output=True,
                cwd=ROOT, preexec_fn=limits, timeout=wall, check=False,
            )  # fmt: skip
        finally:
            if stdin_path:
                stdin.close()  # type: ignore[union-attr]
        rss_kb, cpu = json.loads(Path(report).read_text())
        return Run(
            done.returncode,
            done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace"),
            rss_kb / 1024,
            cpu,
        )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bounded")
    (d / "rules.yaml").write_text(RULES)
    (d / "hpa.yaml").write_text(HPA)
    big = d / "big.yaml"
    with big.open("w") as f:  # 50 MB of a valid list: only the size bound stops it
        line = "- " + "x" * 77 + "\n"
        f.write("pad:\n" + line * (50 * MB // len(line)))
    (d / "dir").mkdir()
    return {"dir": str(d), "rules": str(d / "rules.yaml"), "hpa": str(d / "hpa.yaml"), "big": str(big)}


def matrix() -> list[tuple[Reader, str, Callable[[], bytes | str]]]:
    out = []
    for reader in READERS:
        cases = pem_cases() if reader.base is None else yaml_cases(reader.base)
        if reader.stdin:  # standard input is not a path: the path-only cases do not apply
            cases = {k: v for k, v in cases.items() if not k.startswith("not a file")}
        out += [(reader, name, make) for name, make in cases.items()]
    return out


def _one_case(reader: Reader, name: str, make: Callable[[], bytes | str], w: dict[str, str]) -> str | None:
    """None, or what was wrong with this reader on this input."""
    made = make()
    path = {"big": w["big"], "dir": w["dir"], "zero": "/dev/zero", "missing": w["dir"] + "/missing.yaml"}.get(
        made if isinstance(made, str) else ""
    )
    if path is None:
        fd, path = tempfile.mkstemp(suffix=".yaml", dir=w["dir"])
        with os.fdopen(fd, "wb") as f:
            f.write(made.encode() if isinstance(made, str) else made)
    big = path == w["big"] or path == "/dev/zero"
    argv = reader.command("-" if reader.stdin else path, {"rules": w["rules"], "hpa": w["hpa"]})
    r = run(argv, path if reader.stdin else None, cpu_limit=30 if big else 5)
    lines = [
        line for line in r.stderr.splitlines() if line.strip() and not line.startswith(("warning:", "note:"))
    ]
    problems = []
    if r.code != 2:
        problems.append(f"exit {r.code}, not 2")
    if "Traceback" in r.stderr + r.stdout:
        problems.append("a traceback")
    if len(lines) != 1 or not lines[0].startswith("error: "):
        problems.append(f"{len(lines)} lines on stderr, not one 'error:' line")
    if r.max_rss_mb > (500 if big else 200):
        problems.append(f"peak memory {r.max_rss_mb:.0f} MB")
    if not problems:
        return None
    return f"{reader.name} / {name}: {'; '.join(problems)} ({r.cpu_s:.1f} s CPU)\n    " + "\n    ".join(
        (r.stderr or r.stdout).strip().splitlines()[-3:]
    )


@pytest.mark.timeout(1200)
def test_every_reader_refuses_every_category_of_hostile_input_in_one_line(workdir: dict[str, str]) -> None:
    cases = matrix()
    started = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda c: _one_case(*c, workdir), cases))
    bad = [r for r in results if r is not None]
    assert not bad, f"{len(bad)} of {len(cases)} cases:\n" + "\n".join(bad)
    readers = len(READERS)
    print(
        f"{len(cases)} hostile inputs over {readers} readers refused, in {time.monotonic() - started:.0f} s"
    )


def test_a_large_valid_input_stays_within_the_small_bounds(workdir: dict[str, str]) -> None:
    """An input of about 1 MB that is valid YAML -- a snapshot of 1,800 pods, 3,300 rules --
    is read and decided or checked within 200 MB and 5 s of CPU."""
    snap = yaml.safe_load(SNAPSHOT)
    pod, usage = snap["pods"][0], snap["podMetrics"][0]
    snap["pods"] = [{**pod, "metadata": {**pod["metadata"], "name": f"web-{i}"}} for i in range(1800)]
    snap["podMetrics"] = [
        {**usage, "metadata": {**usage["metadata"], "name": f"web-{i}"}} for i in range(1800)
    ]
    snapshot = Path(workdir["dir"]) / "large-snapshot.yaml"
    snapshot.write_text(yaml.safe_dump(json.loads(json.dumps(snap))))  # no shared nodes: no aliases
    rules = Path(workdir["dir"]) / "large-rules.yaml"
    rule = RULES.split("rules:\n", 1)[1]
    rules.write_text("rules:\n" + rule * (MB // len(rule)))
    for argv in (["controller", "decide", str(snapshot)], ["adapter", "check-config", str(rules)]):
        size = Path(argv[-1]).stat().st_size
        assert 0.8 * MB < size <= MB
        r = run(argv, None, cpu_limit=5)
        assert r.code == 0, r.stderr[-2000:]
        assert r.max_rss_mb <= 200, f"{argv}: {r.max_rss_mb:.0f} MB"
        print(f"{argv[:2]} on {size / MB:.2f} MB: {r.cpu_s:.1f} s CPU, {r.max_rss_mb:.0f} MB")


def test_max_input_size_lets_a_larger_input_through(workdir: dict[str, str]) -> None:
    """The size bound is a default, not a wall: --max-input-size raises it."""
    big = Path(workdir["dir"]) / "padded-rules.yaml"
    big.write_text(RULES + "#" + "x" * (5 * MB) + "\n")
    refused = run(["adapter", "check-config", str(big)], None, cpu_limit=10)
    assert refused.code == 2
    assert "larger than the input limit of 4 MiB" in refused.stderr
    allowed = run(["adapter", "check-config", str(big), "--max-input-size=8Mi"], None, cpu_limit=10)
    assert allowed.code == 0, allowed.stderr


@pytest.mark.parametrize(
    ("argv", "sig", "code"),
    [
        (["controller", "decide", "-"], signal.SIGTERM, 143),
        (["adapter", "check-config", "-"], signal.SIGINT, 130),
    ],
)
def test_a_tool_waiting_on_standard_input_ends_on_a_signal_without_a_traceback(
    argv: list[str], sig: signal.Signals, code: int
) -> None:
    p = subprocess.Popen(
        [sys.executable, "-m", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=ROOT, text=True,
    )  # fmt: skip
    assert p.stdin is not None
    p.stdin.write("now: '2026-01-01T12:00:00Z'\n")  # a stream that never ends
    p.stdin.flush()
    time.sleep(3)
    assert p.poll() is None, p.communicate()
    p.send_signal(sig)
    out, err = p.communicate(timeout=20)
    assert p.returncode == code, err
    assert "Traceback" not in out + err
