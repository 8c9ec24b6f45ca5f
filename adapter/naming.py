"""Names and resources: Prometheus series and labels <-> Kubernetes metrics and objects.

Two mappings, both pure:

* a series name to a metric name (``name.matches`` / ``name.as``, with Go's ``$1`` /
  ``${name}`` expansion, so existing configs name the same metrics);
* a Prometheus label to a group-resource and back (``resources.overrides`` and
  ``resources.template``, e.g. ``kube_<<.Resource>>`` <-> ``kube_pod``). Templates use the
  singular resource name, as prometheus-adapter does through its REST mapper; the table of
  known resources (``shared.kube.resources``) stands in for the mapper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.kube.resources import Resource, by_plural, by_singular

from .config import GroupResource, Naming, Resources

NAMESPACES = GroupResource("", "namespaces")
PODS = GroupResource("", "pods")
NODES = GroupResource("", "nodes")


class NamingError(ValueError):
    """A series does not fit a rule's naming."""


def known(gr: GroupResource) -> Resource | None:
    """The well-known resource a group-resource names (an empty group: any group)."""
    return by_plural(gr.resource, gr.group or None)


def namespaced(gr: GroupResource) -> bool:
    found = known(gr)
    return found.namespaced if found else True


def singular(gr: GroupResource) -> str:
    found = known(gr)
    return found.singular if found else gr.resource.removesuffix("s")


def _expand(template: str, match: re.Match[str]) -> str:
    """Go's Regexp.Expand: $1, ${1}, $name, ${name}; $$ is a dollar; unknown names are empty."""
    out: list[str] = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch != "$" or i + 1 >= len(template):
            out.append(ch)
            i += 1
            continue
        nxt = template[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
            continue
        if nxt == "{":
            end = template.find("}", i + 2)
            if end < 0:
                out.append(ch)
                i += 1
                continue
            name, i = template[i + 2 : end], end + 1
        else:
            m = re.match(r"[A-Za-z0-9_]+", template[i + 1 :])
            if not m:
                out.append(ch)
                i += 1
                continue
            name, i = m.group(0), i + 1 + m.end()
        try:
            value = match.group(int(name)) if name.isdigit() else match.group(name)
        except IndexError:  # no such group: Go expands it to nothing
            value = ""
        out.append(value or "")
    return "".join(out)


def metric_name(naming: Naming, series: str) -> str:
    m = naming.matches.search(series)
    if m is None:
        raise NamingError(f"series name {series!r} did not match expected pattern {naming.matches.pattern!r}")
    return _expand(naming.as_, m)


@dataclass(frozen=True)
class ResourceMapper:
    """Label <-> group-resource for one rule."""

    resources: Resources

    def _template_regex(self) -> re.Pattern[str] | None:
        t = self.resources.template
        if t is None:
            return None
        pattern = ""
        for part in t.parts:
            if isinstance(part, str):
                pattern += re.escape(part)
            elif part.name == "Resource":
                pattern += r"(?P<resource>[a-z0-9]+)"
            elif part.name == "Group":
                pattern += r"(?P<group>[a-z0-9_.]*)"
            else:
                return None
        return re.compile(f"^{pattern}$")

    def resource_for_label(self, label: str) -> GroupResource | None:
        if label in self.resources.overrides:
            return self.resources.overrides[label]
        rx = self._template_regex()
        if rx is None:
            return None
        m = rx.match(label)
        if not m:
            return None
        found = by_singular(m.group("resource"))
        if found is None:
            return None
        plural, group = found.plural, found.group
        if "group" in rx.groupindex and m.group("group") not in (group, group.replace(".", "_")):
            return None
        return GroupResource(group, plural)

    def label_for_resource(self, gr: GroupResource) -> str | None:
        for label, target in self.resources.overrides.items():
            if target.resource == gr.resource and (
                target.group == gr.group or not target.group or not gr.group
            ):
                return label
        if self.resources.template is not None:
            return self.resources.template.render(
                {"Resource": singular(gr), "Group": gr.group.replace(".", "_")}
            )
        return None

    def namespace_label(self) -> str | None:
        return self.label_for_resource(NAMESPACES)
