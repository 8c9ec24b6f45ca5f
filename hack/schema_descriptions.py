"""Copy each value's `# --` comment in charts/promhpa/values.yaml into the description of
its field in values.schema.json (a maintainer's tool: run it after adding a value; the
chart tests fail while a field lacks a description).

Usage: python hack/schema_descriptions.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

CHART = Path(__file__).resolve().parent.parent / "charts" / "promhpa"
_KEY = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9_]*):")


def comments() -> dict[tuple[str, ...], str]:
    """Dotted value path -> its `# --` comment (continuation lines joined)."""
    out: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    collecting = False
    for line in (CHART / "values.yaml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            pending, collecting = [stripped[4:].strip()], True
            continue
        if stripped.startswith("#"):
            if collecting:
                pending.append(stripped[1:].strip())
            continue
        m = _KEY.match(line)
        if not m:
            pending, collecting = [], False
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        if pending:
            out[tuple(k for _, k in stack)] = " ".join(pending)
        pending, collecting = [], False
    return out


def fill(schema: dict, path: tuple[str, ...], found: dict[tuple[str, ...], str]) -> None:
    for key, sub in (schema.get("properties") or {}).items():
        here = (*path, key)
        text = found.get(here)
        if text and "description" not in sub:
            sub["description"] = text
        fill(sub, here, found)


def main() -> None:
    path = CHART / "values.schema.json"
    schema = json.loads(path.read_text())
    fill(schema, (), comments())
    path.write_text(json.dumps(schema, indent=2) + "\n")


if __name__ == "__main__":
    main()
