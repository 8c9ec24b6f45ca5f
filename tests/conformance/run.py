#!/usr/bin/env python3
"""Run HPA conformance cases through `python -m controller decide`.

usage: run.py [--decide CMD] [--verbose] PATH...   (files or folders of *.yaml)
Prints a line per failing case and ends with 'N passed, M failed'.
Exit status 0 when every case passed, 1 otherwise.
"""

import argparse
import json
import pathlib
import shlex
import subprocess
import sys
from decimal import Decimal, InvalidOperation

import yaml

SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def quantity(v):
    """Numeric value of a Kubernetes quantity (string or number), or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return Decimal(str(v))
    if not isinstance(v, str):
        return None
    s = v.strip()
    for suf in sorted(SUFFIX, key=len, reverse=True):
        if suf and s.endswith(suf):
            try:
                return Decimal(s[: -len(suf)]) * SUFFIX[suf]
            except InvalidOperation:
                return None
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def same_value(want, got):
    if want == got:
        return True
    qw, qg = quantity(want), quantity(got)
    if qw is not None and qg is not None:
        return abs(qw - qg) <= abs(qw) * Decimal("1e-9") + Decimal("1e-9")
    return False


def subset_diff(want, got, path):
    """First place where `got` does not contain `want`, or None."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{path}: want an object, got {json.dumps(got)}"
        for k, w in want.items():
            d = subset_diff(w, got.get(k), f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) < len(want):
            return f"{path}: want {len(want)} items, got {json.dumps(got)}"
        for i, w in enumerate(want):
            d = subset_diff(w, got[i], f"{path}[{i}]")
            if d:
                return d
        return None
    return None if same_value(want, got) else f"{path}: want {want!r}, got {got!r}"


def check(expect, out):
    if "error" in out and "desiredReplicas" not in out:
        return f"decide failed: {out['error']}"
    for key in ("desiredReplicas", "rescale"):
        if key in expect and out.get(key) != expect[key]:
            return f"{key}: want {expect[key]!r}, got {out.get(key)!r}"
    conds = {c.get("type"): c for c in (out.get("status") or {}).get("conditions") or []}
    for ctype, w in (expect.get("conditions") or {}).items():
        c = conds.get(ctype)
        if w.get("absent"):
            if c is not None:
                return f"condition {ctype}: want it absent, got {c.get('status')}/{c.get('reason')}"
            continue
        if c is None:
            return f"condition {ctype}: missing (got {sorted(conds)})"
        for f in ("status", "reason"):
            if f in w and c.get(f) != w[f]:
                return f"condition {ctype}.{f}: want {w[f]!r}, got {c.get(f)!r}"
        if "messageContains" in w and w["messageContains"] not in (c.get("message") or ""):
            return f"condition {ctype}.message: want it to contain {w['messageContains']!r}, got {c.get('message')!r}"
    if "currentMetrics" in expect:
        d = subset_diff(
            expect["currentMetrics"],
            (out.get("status") or {}).get("currentMetrics") or [],
            "status.currentMetrics",
        )
        if d:
            return d
    if "events" in expect:
        got = [e.get("reason") for e in out.get("events") or []]
        if got != expect["events"]:
            return f"events: want {expect['events']}, got {got}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decide", default=f"{shlex.quote(sys.executable)} -m controller decide")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    files = []
    for p in map(pathlib.Path, a.paths):
        files += sorted(p.rglob("*.yaml")) if p.is_dir() else [p]
    cases = [(f, yaml.safe_load(f.read_text())) for f in files]
    proc = subprocess.run(
        shlex.split(a.decide) + [str(f) for f, _ in cases], capture_output=True, text=True, timeout=600
    )
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    if len(lines) != len(cases):
        print(
            f"decide printed {len(lines)} lines for {len(cases)} cases (exit {proc.returncode}); "
            f"stderr: {proc.stderr.strip()[-800:]}"
        )
        # fall back to one process per case, so one bad case does not hide the rest
        lines = []
        for f, _ in cases:
            p = subprocess.run(shlex.split(a.decide) + [str(f)], capture_output=True, text=True, timeout=120)
            lines.append(
                p.stdout.strip().splitlines()[-1]
                if p.stdout.strip()
                else json.dumps({"error": (p.stderr.strip() or f"exit {p.returncode}")[-400:]})
            )
    passed = failed = 0
    for (f, case), line in zip(cases, lines):
        try:
            out = json.loads(line)
        except json.JSONDecodeError:
            out = {"error": f"not JSON: {line[:200]}"}
        why = check(case.get("expect") or {}, out)
        if why:
            failed += 1
            print(f"FAIL {f}: {why}")
        else:
            passed += 1
            if a.verbose:
                print(f"ok   {f}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == "__main__":
    main()
