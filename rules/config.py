"""prometheus-adapter's rule file, read unchanged and validated strictly.

Users migrate by pointing promhpa at the config they already have, so the format is
prometheus-adapter's (``rules``, ``externalRules``, ``resourceRules``). Unlike
prometheus-adapter we refuse what we do not understand: an unknown key, a bad regex or a
template that does not parse is an error that names the file, the line and the key path,
e.g. ``adapter.yaml:14: rules[2].resources.overides: unknown key (did you mean
'overrides'?)``. A typo therefore never silently drops a metric.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import yaml

from shared import inputfiles

from . import goregexp
from .backend import Backend
from .backend_config import check_backend_refs, parse_backends
from .goregexp import GoRegexp
from .reader import (
    RESOURCE_FIELDS,
    Checker,
    ConfigError,
)
from .templates import Template
from .upstream_config import Upstream, parse_upstreams

# libyaml composes in C: the pure-Python composer took 32 s over a 5 MB file
_COMPOSER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

T = TypeVar("T")
__all__ = ["Backend", "ConfigError"]  # where the rule file's readers look for them


@dataclass(frozen=True)
class GroupResource:
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True)
class SeriesFilter:
    pattern: GoRegexp
    negate: bool  # isNot

    def keep(self, name: str) -> bool:
        found = self.pattern.search(name) is not None
        return not found if self.negate else found


@dataclass(frozen=True)
class Resources:
    overrides: dict[str, GroupResource] = field(default_factory=dict)
    template: Template | None = None
    namespaced: bool = True  # externalRules only
    # label -> (the resource as the user wrote it, its line): messages quote the user's words
    written: dict[str, tuple[str, int]] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Naming:
    matches: GoRegexp
    as_: str


@dataclass(frozen=True)
class Rule:
    """One discovery rule: which series, how they are named, how they are queried."""

    index: int
    kind: str  # "rules" | "externalRules"
    series_query: str
    series_filters: tuple[SeriesFilter, ...]
    resources: Resources
    naming: Naming
    metrics_query: Template
    line: int = 0  # of metricsQuery in the file, for messages about the query itself
    backend: str = ""  # a name from ``backends``; "" is the command line's Prometheus
    series_line: int = 0  # of seriesQuery
    name_line: int = 0  # of name.as (0: no name.as)
    # our extension: what a series the query does not return means -- "error" (no value:
    # the HPA reports the metric as failed, prometheus-adapter's behaviour) or "zero" (a value
    # of 0: a queue whose series vanishes when it is empty)
    absent: str = "error"


@dataclass(frozen=True)
class ResourceQuery:
    container_query: Template
    node_query: Template
    resources: Resources
    container_label: str


@dataclass(frozen=True)
class ResourceRules:
    cpu: ResourceQuery | None
    memory: ResourceQuery | None
    window: str
    backend: str = ""


@dataclass(frozen=True)
class Config:
    rules: tuple[Rule, ...]
    external_rules: tuple[Rule, ...]
    resource_rules: ResourceRules | None
    source: str = "<config>"
    backends: tuple[Backend, ...] = ()
    upstreams: tuple[Upstream, ...] = ()  # other servers of the metrics APIs (``upstream_config``)

    def backend_names(self) -> list[str]:
        """ "" (the command line's) and every named one, in file order."""
        return ["", *(b.name for b in self.backends)]


_RULE_KEYS = {"seriesQuery", "seriesFilters", "resources", "name", "metricsQuery", "backend", "absent"}
ABSENT = ("error", "zero")
_RESOURCES_KEYS = {"overrides", "template", "namespaced"}
_TOP_KEYS = {"rules", "externalRules", "resourceRules", "backends", "upstreams"}
_ANY = goregexp.compile(".*")


def _resources(c: Checker, node: yaml.Node | None, path: str, external: bool) -> Resources:
    if node is None:
        return Resources()
    m = c.mapping(node, path, _RESOURCES_KEYS if external else _RESOURCES_KEYS - {"namespaced"})
    overrides: dict[str, GroupResource] = {}
    written: dict[str, tuple[str, int]] = {}
    if "overrides" in m:
        om = m["overrides"]
        if not isinstance(om, yaml.MappingNode):
            raise c.fail(om, f"{path}.overrides", "must be a mapping of label -> {group, resource}")
        for k, v in om.value:
            label = str(k.value)
            gr = c.mapping(v, f"{path}.overrides.{label}", {"group", "resource"})
            if "resource" not in gr:
                raise c.fail(v, f"{path}.overrides.{label}", "needs a 'resource'")
            as_written = c.string(gr["resource"], "")
            overrides[label] = GroupResource(
                c.string(gr["group"], "") if "group" in gr else "", _plural(as_written)
            )
            written[label] = (as_written, gr["resource"].start_mark.line + 1)
    template = None
    if "template" in m:
        template = c.template(m["template"], f"{path}.template", RESOURCE_FIELDS)
        if ".Resource" not in template.text:
            raise c.fail(m["template"], f"{path}.template", "must contain <<.Resource>>")
    namespaced = c.boolean(m["namespaced"], f"{path}.namespaced") if "namespaced" in m else True
    return Resources(overrides, template, namespaced, written)


_IRREGULAR = {"endpoints": "endpoints", "ingress": "ingresses", "networkpolicy": "networkpolicies"}


def _plural(resource: str) -> str:
    """Resource names may be written singular (pod) or plural (pods); we keep the plural."""
    r = resource.lower()
    if r in _IRREGULAR:
        return _IRREGULAR[r]
    if r.endswith("s"):
        return r
    if r.endswith("y") and not r.endswith(("ay", "ey", "oy", "uy")):
        return r[:-1] + "ies"
    return r + "s"


def _naming(c: Checker, node: yaml.Node | None, path: str) -> Naming:
    if node is None:
        return Naming(_ANY, "$0")
    m = c.mapping(node, path, {"matches", "as"})
    matches = c.regex(m["matches"], f"{path}.matches") if "matches" in m else _ANY
    if matches.pattern == "":
        matches = _ANY
    as_ = c.string(m["as"], f"{path}.as") if "as" in m else ""
    if not as_:
        groups = matches.groups
        if groups == 0:
            as_ = "$0"
        elif groups == 1:
            as_ = "$1"
        else:
            raise c.fail(
                node,
                f"{path}.as",
                f"must be set: 'matches' has {groups} capture groups, so the name is ambiguous",
            )
    return Naming(matches, as_)


def _rule(c: Checker, node: yaml.Node, path: str, index: int, kind: str) -> Rule | None:
    """One rule, every mistake in it noted (None when it has one)."""
    before = len(c.noted)
    m = c.mapping(node, path, _RULE_KEYS)
    complete = c.required(node, m, path, ("seriesQuery", "metricsQuery"))
    filters = []
    for i, f in enumerate(c.seq(m["seriesFilters"], f"{path}.seriesFilters") if "seriesFilters" in m else []):
        fm = c.mapping(f, f"{path}.seriesFilters[{i}]", {"is", "isNot"})
        if len(fm) != 1:
            c.note(c.fail(f, f"{path}.seriesFilters[{i}]", "needs exactly one of 'is' or 'isNot'"))
            continue
        key, value = next(iter(fm.items()))
        rx: GoRegexp | None = c.field(partial(c.regex, value, f"{path}.seriesFilters[{i}].{key}"), None)
        if rx is not None:
            filters.append(SeriesFilter(rx, key == "isNot"))
    external = kind == "externalRules"
    resources = c.field(lambda: _resources(c, m.get("resources"), f"{path}.resources", external), None)
    if (
        kind == "rules"
        and resources is not None
        and not resources.overrides
        and resources.template is None
        and not c.misspelled(path, "resources")
        and not c.misspelled(f"{path}.resources", "overrides")
        and not c.misspelled(f"{path}.resources", "template")
    ):
        c.note(
            c.fail(node, f"{path}.resources", "needs 'overrides' or a 'template' to map labels to resources")
        )
    naming = c.field(lambda: _naming(c, m.get("name"), f"{path}.name"), None)
    series_query = c.field(lambda: c.string(m["seriesQuery"], f"{path}.seriesQuery"), "") if complete else ""
    query = c.field(lambda: c.template(m["metricsQuery"], f"{path}.metricsQuery"), None) if complete else None
    backend = c.field(lambda: c.string(m["backend"], f"{path}.backend"), "") if "backend" in m else ""
    absent = c.field(lambda: _absent(c, m.get("absent"), f"{path}.absent"), "error")
    if len(c.noted) > before or resources is None or naming is None or query is None:
        return None
    return Rule(
        index=index,
        kind=kind,
        series_query=series_query,
        series_filters=tuple(filters),
        resources=resources,
        naming=naming,
        metrics_query=query,
        line=m["metricsQuery"].start_mark.line + 1,
        backend=backend,
        series_line=m["seriesQuery"].start_mark.line + 1,
        name_line=_as_line(m.get("name")),
        absent=absent,
    )


def _absent(c: Checker, node: yaml.Node | None, path: str) -> str:
    if node is None:
        return "error"
    value = c.string(node, path)
    if value not in ABSENT:
        raise c.fail(
            node, path, f"must be 'error' (the default: no value, the metric fails) or 'zero', not {value!r}"
        )
    return value


def _as_line(node: yaml.Node | None) -> int:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == "as":
                return int(v.start_mark.line) + 1
    return 0


def _resource_rules(c: Checker, node: yaml.Node) -> ResourceRules | None:
    """The resource rules with every mistake in them noted (not only the first), as each
    custom rule's are; None when any was found."""
    m = c.mapping(node, "resourceRules", {"cpu", "memory", "window", "backend"})
    before = len(c.noted)

    def one(key: str) -> ResourceQuery | None:
        if key not in m:
            return None
        path = f"resourceRules.{key}"
        q = c.field(
            lambda: c.mapping(m[key], path, {"containerQuery", "nodeQuery", "resources", "containerLabel"}),
            None,
        )
        if q is None:
            return None
        c.required(m[key], q, path, ("containerQuery", "nodeQuery"))
        container = node_query = None
        if "containerQuery" in q:
            container = c.field(lambda: c.template(q["containerQuery"], f"{path}.containerQuery"), None)
        if "nodeQuery" in q:
            node_query = c.field(lambda: c.template(q["nodeQuery"], f"{path}.nodeQuery"), None)
        resources = c.field(
            lambda: _resources(c, q.get("resources"), f"{path}.resources", external=False), None
        )
        label = "container"
        if "containerLabel" in q:
            label = c.field(lambda: c.string(q["containerLabel"], f"{path}.containerLabel"), "container")
        if container is None or node_query is None or resources is None:
            return None
        return ResourceQuery(container, node_query, resources, label)

    def window() -> str:
        text = c.string(m["window"], "resourceRules.window") if "window" in m else "5m"
        if not re.fullmatch(r"(\d+(ms|s|m|h))+", text):
            raise c.fail(
                m.get("window"), "resourceRules.window", f"{text!r} is not a duration like '1m' or '30s'"
            )
        return text

    cpu, memory = one("cpu"), one("memory")
    win = c.field(window, "5m")
    backend = c.field(lambda: c.string(m["backend"], "resourceRules.backend"), "") if "backend" in m else ""
    if len(c.noted) > before:
        return None
    return ResourceRules(cpu, memory, win, backend)


def parse_config(text: str, source: str = "<config>", fast_regexps: bool = True) -> Config:
    """The rule file, or ConfigError naming every problem found (``read_config``).
    ``fast_regexps=False`` searches every regexp with RE2 alone: for rules written by
    someone other than the platform, whose patterns could make Python's backtracking take
    exponential time (``goregexp``)."""
    config, errors = read_config(text, source, fast_regexps)
    if errors or config is None:
        raise ConfigError(errors[0] if errors else f"{source}: invalid", errors)
    return config


def read_config(
    text: str, source: str = "<config>", fast_regexps: bool = True
) -> tuple[Config | None, list[str]]:
    """The rule file read as far as it goes, and every problem found on the way: each rule,
    the resource rules, the backends and the upstreams are read on their own, so one bad
    rule does not hide the next (three errors, one round of ``helm upgrade``). The Config
    holds the parts that were read (None when the file is not a rule file at all)."""
    try:
        inputfiles.check_yaml(text, source)
    except inputfiles.InputError as e:
        return None, [str(e)]
    try:
        root = yaml.compose(text, Loader=_COMPOSER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        # libyaml marks a document cut short at the end of the stream, a line past the last
        # one of a file without its final newline: name the file's last line instead
        last = text.count("\n") + 1
        line = f":{min(mark.line + 1, last)}" if mark else ""
        return None, [f"{source}{line}: not valid YAML: {getattr(e, 'problem', None) or e}"]
    c = Checker(source, fast_regexps)
    if root is None:
        return Config((), (), None, source), []
    errors: list[str] = []

    def attempt(read: Callable[[], T | None], default: T) -> T:
        """One part read on its own: every error met (raised, or noted on the way) reported,
        and the part refused if there was one."""
        before, reported = len(c.noted), len(errors)
        try:
            got = read()
        except ConfigError as e:
            got = None
            errors.extend(c.noted[before:])
            errors.extend(e.messages)
        else:
            errors.extend(c.noted[before:])
        del c.noted[before:]
        return default if got is None or len(errors) > reported else got

    top = attempt(lambda: c.mapping(root, "", _TOP_KEYS), None)
    if top is None:
        return None, errors
    parsed: dict[str, list[Rule]] = {"rules": [], "externalRules": []}
    for key in parsed:
        nodes: list[yaml.Node] = []
        if key in top:
            nodes = attempt(partial(c.seq, top[key], key), [])
        for i, n in enumerate(nodes):
            rule = attempt(partial(_rule, c, n, f"{key}[{i}]", i, key), None)
            if rule is not None:
                parsed[key].append(rule)
    resource_rules: ResourceRules | None = None
    if "resourceRules" in top:
        resource_rules = attempt(lambda: _resource_rules(c, top["resourceRules"]), None)
    backends: tuple[Backend, ...] = ()
    if "backends" in top:
        backends = attempt(lambda: parse_backends(c, top["backends"]), ())
    attempt(lambda: check_backend_refs(c, top, {b.name for b in backends}), None)
    taken = {b.name for b in backends}
    upstreams: tuple[Upstream, ...] = ()
    if "upstreams" in top:
        upstreams = attempt(lambda: parse_upstreams(c, top["upstreams"], taken), ())
    config = Config(
        tuple(parsed["rules"]), tuple(parsed["externalRules"]), resource_rules, source, backends, upstreams
    )
    return config, list(dict.fromkeys(errors))  # a key read by two checks is reported once
