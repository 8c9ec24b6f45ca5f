"""The ``<< >>`` templates of prometheus-adapter rules, without a Go runtime.

prometheus-adapter renders ``metricsQuery`` and ``resources.template`` with Go's
text/template and ``<<``/``>>`` delimiters. Real configs use a small part of it: field
references (``<<.Series>>``, ``<<.LabelMatchers>>``, ``<<.GroupBy>>``, ``<<.Resource>>``),
map access (``<<.LabelValuesByName.pod>>`` or ``<<index .LabelValuesByName "pod">>``).
That is what we support; anything else is rejected when the config is loaded, with the
action named, rather than rendered wrongly at request time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_ACTION = re.compile(r"<<-?\s*(.*?)\s*-?>>", re.S)
_FIELD = re.compile(r"^\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)$")
_INDEX = re.compile(r'^index\s+\.([A-Za-z_][A-Za-z0-9_]*)\s+"([^"]*)"$')


class TemplateError(ValueError):
    """A template uses something we cannot render, or a variable is missing."""


@dataclass(frozen=True)
class _Ref:
    name: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Template:
    text: str
    parts: tuple[str | _Ref, ...]

    @classmethod
    def parse(cls, text: str) -> Template:
        parts: list[str | _Ref] = []
        pos = 0
        for m in _ACTION.finditer(text):
            if m.start() > pos:
                parts.append(text[pos : m.start()])
            action = m.group(1)
            if f := _FIELD.match(action):
                keys = tuple(k for k in f.group(2).split(".") if k)
                parts.append(_Ref(f.group(1), keys))
            elif i := _INDEX.match(action):
                parts.append(_Ref(i.group(1), (i.group(2),)))
            else:
                raise TemplateError(
                    f"unsupported action <<{action}>> in {text!r} (supported: <<.Field>>, <<.Map.key>>, "
                    '<<index .Map "key">>)'
                )
            pos = m.end()
        rest = text[pos:]
        if "<<" in rest or ">>" in rest:
            raise TemplateError(f"unbalanced << >> in {text!r}")
        if rest:
            parts.append(rest)
        return cls(text, tuple(parts))

    def fields(self) -> set[str]:
        return {p.name for p in self.parts if isinstance(p, _Ref)}

    def render(self, values: Mapping[str, Any]) -> str:
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            if p.name not in values:
                raise TemplateError(
                    f"template {self.text!r} uses .{p.name}, which is not available here "
                    f"(available: {', '.join(sorted(values))})"
                )
            value: Any = values[p.name]
            for key in p.keys:
                value = value.get(key, "") if isinstance(value, Mapping) else ""
            out.append(_text(value))
        return "".join(out)


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + " ".join(map(str, value)) + "]"  # Go's %v of a slice
    return str(value)
