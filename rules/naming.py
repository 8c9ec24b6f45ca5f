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
from .goregexp import expand

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


def metric_name(naming: Naming, series: str) -> str:
    m = naming.matches.search(series)
    if m is None:
        raise NamingError(f"series name {series!r} did not match expected pattern {naming.matches.pattern!r}")
    return expand(naming.matches, naming.as_, m)


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
