"""Reading a rule file's YAML with the file, line and key path in every error: the checker
the rule file's sections (``config``) and its upstreams (``upstream_config``) share.

Its own module so that both can import it: ``upstream_config`` reached into ``config``'s
private names from inside a function, to break the cycle the two made.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable
from typing import TypeVar

import yaml

from shared.urls import is_http_url

from . import goregexp
from .goregexp import GoRegexp
from .templates import Template, TemplateError

T = TypeVar("T")
BACKEND_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class ConfigError(ValueError):
    """A rule file's problems; each message names file, line and key path. ``messages``
    holds every problem found in one reading (one per line of ``str()``)."""

    def __init__(self, message: str, messages: list[str] | None = None) -> None:
        self.messages = messages if messages is not None else [message]
        super().__init__("\n".join(self.messages))


# the fields prometheus-adapter's templates offer
QUERY_FIELDS = frozenset({"Series", "LabelMatchers", "LabelValuesByName", "GroupBy", "GroupBySlice"})
RESOURCE_FIELDS = frozenset({"Resource", "Group"})


class Checker:
    """Walks the YAML node tree so errors can carry line numbers. A key that is not allowed
    is noted in ``noted`` and left out, so the reader goes on and reports the next mistake of
    the same rule too; the part being read is refused once it has been read
    (``read_config``'s ``attempt``)."""

    def __init__(self, source: str, fast_regexps: bool = True) -> None:
        self.source, self.fast_regexps = source, fast_regexps
        self.noted: list[str] = []

    def note(self, error: ConfigError) -> None:
        self.noted.extend(error.messages)

    def field(self, read: Callable[[], T], default: T) -> T:
        """``read()``, or ``default`` with its error noted: one bad field hides no other."""
        try:
            return read()
        except ConfigError as e:
            self.note(e)
            return default

    def fail(self, node: yaml.Node | None, path: str, message: str) -> ConfigError:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        return ConfigError(
            f"{self.source}{line}: {path}: {message}" if path else f"{self.source}{line}: {message}"
        )

    def mapping(self, node: yaml.Node, path: str, allowed: set[str]) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, path, f"must be a mapping, got {kind_of(node)}")
        out: dict[str, yaml.Node] = {}
        for k, v in node.value:
            key = str(k.value)
            if key not in allowed:
                self.note(
                    self.fail(
                        k,
                        f"{path}.{key}" if path else key,
                        f"unknown key{_unknown_hint(key, frozenset(allowed))}",
                    )
                )
                continue
            if key in out:
                self.note(self.fail(k, f"{path}.{key}" if path else key, "duplicate key"))
                continue
            out[key] = v
        return out

    def required(self, node: yaml.Node, m: dict[str, yaml.Node], path: str, keys: tuple[str, ...]) -> bool:
        """Whether every one of ``keys`` is in ``m``; a missing one is noted, unless a
        misspelling of it was just reported as an unknown key (one mistake, one line)."""
        ok = True
        for key in keys:
            if key not in m:
                ok = False
                if not self.misspelled(path, key):
                    self.note(self.fail(node, f"{path}.{key}", "is required"))
        return ok

    def misspelled(self, path: str, key: str) -> bool:
        """Whether an unknown key under ``path`` was just reported as a misspelling of ``key``."""
        return any(f"did you mean {key!r}" in n and f": {path}." in n for n in self.noted)

    def seq(self, node: yaml.Node, path: str) -> list[yaml.Node]:
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, path, f"must be a list, got {kind_of(node)}")
        return list(node.value)

    def string(self, node: yaml.Node, path: str) -> str:
        """A string field: a number or a boolean there is refused, as prometheus-adapter's
        loader refuses it (quoting it makes it a string)."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, path, f"must be a string, got {kind_of(node)}")
        if node.tag.endswith((":int", ":float", ":bool")):
            what = "a boolean" if node.tag.endswith(":bool") else "a number"
            raise self.fail(
                node, path, f"must be a string, got {what} ({node.value}); quote it if it is meant as text"
            )
        return "" if node.tag.endswith(":null") else str(node.value)

    def boolean(self, node: yaml.Node, path: str) -> bool:
        if not isinstance(node, yaml.ScalarNode) or not node.tag.endswith(":bool"):
            raise self.fail(node, path, "must be true or false")
        return str(node.value).lower() in ("true", "yes", "on")

    def regex(self, node: yaml.Node, path: str) -> GoRegexp:
        """Go's regexp (RE2 syntax), as prometheus-adapter compiles it (``goregexp``)."""
        text = self.string(node, path)
        try:
            return goregexp.compile(text, allow_fast=self.fast_regexps)
        except goregexp.GoRegexpError as e:
            raise self.fail(node, path, f"invalid regular expression {text!r}: {e}") from None

    def template(self, node: yaml.Node, path: str, fields: frozenset[str] = QUERY_FIELDS) -> Template:
        """A ``<< >>`` template whose every field exists for its kind: prometheus-adapter
        would fail at request time ("can't evaluate field ..."); we refuse at load."""
        text = self.string(node, path)
        try:
            t = Template.parse(text)
        except TemplateError as e:
            raise self.fail(node, path, f"invalid template: {e}") from None
        for name in sorted(t.fields() - fields):
            hint = difflib.get_close_matches(name, sorted(fields), n=1)
            raise self.fail(
                node,
                path,
                f"unknown template field .{name}"
                + (
                    f" (did you mean .{hint[0]}?)"
                    if hint
                    else f" (known: {', '.join('.' + f for f in sorted(fields))})"
                ),
            )
        return t


@functools.lru_cache(maxsize=1024)
def _unknown_hint(key: str, allowed: frozenset[str]) -> str:
    """The nearest allowed key, or the list: a file of 30,000 rules with the same typo asks
    difflib once."""
    hint = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else f" (allowed: {', '.join(sorted(allowed))})"


def kind_of(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"the scalar {node.value!r}"


def duration_seconds(c: Checker, node: yaml.Node, path: str) -> float:
    text = c.string(node, path)
    found = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", text)
    if not found:
        raise c.fail(node, path, f"{text!r} is not a duration like '10s' or '500ms'")
    return float(found.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[found.group(2)]


def named_url(
    c: Checker, n: yaml.Node, m: dict[str, yaml.Node], path: str, taken: set[str], duplicate: str
) -> tuple[str, str]:
    """The required ``name`` (a DNS label, not in ``taken``: else ``duplicate``, formatted with
    it) and ``url`` (http or https) of a backend or an upstream."""
    for required in ("name", "url"):
        if required not in m:
            raise c.fail(n, f"{path}.{required}", "is required")
    name = c.string(m["name"], f"{path}.name")
    if not BACKEND_NAME.fullmatch(name):
        raise c.fail(m["name"], f"{path}.name", f"{name!r} must be lowercase letters, digits and '-'")
    if name in taken:
        raise c.fail(m["name"], f"{path}.name", duplicate.format(name=name))
    url = c.string(m["url"], f"{path}.url")
    if not is_http_url(url):
        raise c.fail(m["url"], f"{path}.url", f"{url!r} must be an http(s) URL")
    return name, url


def optional(c: Checker, m: dict[str, yaml.Node], key: str, path: str) -> str | None:
    return (c.string(m[key], f"{path}.{key}") or None) if key in m else None
