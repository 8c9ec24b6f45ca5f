"""The rule file's ``upstreams``: other servers of the metrics APIs promhpa forwards to.

Only one APIService can own ``custom.metrics.k8s.io`` and ``external.metrics.k8s.io``; with
``upstreams`` promhpa owns them and passes the metrics it does not serve on to KEDA's
metrics server, prometheus-adapter, Datadog's cluster agent -- any server of these APIs::

    upstreams:
    - name: keda
      url: https://keda-operator-metrics-apiserver.keda.svc
      caFile: /etc/promhpa/keda/ca.crt        # or insecureSkipTLSVerify: true
      bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token   # the default
      # or clientCertFile + clientKeyFile
      timeout: 5s
      external: ['^s[0-9]+-prometheus-.*$']   # metric names (regular expressions, whole name)
      custom: []
      namespaces: []                          # empty: every namespace

A request for a metric an upstream's patterns match goes there (the first such upstream,
in file order); every other metric is promhpa's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from .goregexp import GoRegexp, whole
from .reader import Checker, duration_seconds, named_url, optional

IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
_KEYS = {
    "name", "url", "caFile", "insecureSkipTLSVerify", "bearerTokenFile", "clientCertFile", "clientKeyFile",
    "timeout", "external", "custom", "namespaces",
}  # fmt: skip


@dataclass(frozen=True)
class Upstream:
    name: str
    url: str
    ca_file: str | None = None
    insecure_skip_tls_verify: bool = False
    bearer_token_file: str | None = None  # None with no client certificate: the in-cluster token
    client_cert: str | None = None
    client_key: str | None = None
    timeout: float = 5.0
    external: tuple[GoRegexp, ...] = ()  # each anchored at both ends (``goregexp.whole``)
    custom: tuple[GoRegexp, ...] = ()
    namespaces: tuple[str, ...] = ()
    line: int = 0

    def routes(self, api: str, metric: str, namespace: str | None) -> bool:
        """Whether a request for ``metric`` of ``api`` ("custom" or "external") goes here."""
        if self.namespaces and namespace not in self.namespaces:
            return False
        patterns = self.external if api == "external" else self.custom
        return any(p.search(metric) for p in patterns)

    def pattern_for(self, api: str, metric: str) -> str | None:
        """The pattern routing ``metric`` here (for messages), or None."""
        for p in self.external if api == "external" else self.custom:
            if p.search(metric):
                return p.pattern
        return None


def parse_upstreams(c: Checker, node: yaml.Node, taken: set[str]) -> tuple[Upstream, ...]:
    """``upstreams`` checked key by key (file, line and key in every error); ``taken``: the
    backends' names, which an upstream may not reuse."""

    out: list[Upstream] = []
    for i, n in enumerate(c.seq(node, "upstreams")):
        path = f"upstreams[{i}]"
        m = c.mapping(n, path, _KEYS)
        used = taken | {u.name for u in out}
        name, url = named_url(c, n, m, path, used, "{name!r} is already the name of a backend or upstream")
        url = url.rstrip("/")
        if ("clientCertFile" in m) != ("clientKeyFile" in m):
            raise c.fail(n, path, "'clientCertFile' and 'clientKeyFile' go together")
        external = _patterns(c, m, "external", path)
        custom = _patterns(c, m, "custom", path)
        if not external and not custom:
            raise c.fail(n, path, "routes nothing: give 'external' and/or 'custom' metric name patterns")
        spaces = c.seq(m["namespaces"], f"{path}.namespaces") if "namespaces" in m else []
        namespaces = tuple(c.string(x, f"{path}.namespaces[{j}]") for j, x in enumerate(spaces))
        out.append(
            Upstream(
                name=name,
                url=url,
                ca_file=optional(c, m, "caFile", path),
                insecure_skip_tls_verify=(
                    c.boolean(m["insecureSkipTLSVerify"], f"{path}.insecureSkipTLSVerify")
                    if "insecureSkipTLSVerify" in m
                    else False
                ),
                bearer_token_file=optional(c, m, "bearerTokenFile", path),
                client_cert=optional(c, m, "clientCertFile", path),
                client_key=optional(c, m, "clientKeyFile", path),
                timeout=duration_seconds(c, m["timeout"], f"{path}.timeout") if "timeout" in m else 5.0,
                external=external,
                custom=custom,
                namespaces=namespaces,
                line=n.start_mark.line + 1,
            )
        )
    return tuple(out)


def _patterns(c: Checker, m: dict[str, yaml.Node], key: str, path: str) -> tuple[GoRegexp, ...]:
    if key not in m:
        return ()
    nodes = enumerate(c.seq(m[key], f"{path}.{key}"))
    return tuple(whole(c.regex(x, f"{path}.{key}[{j}]")) for j, x in nodes)


def routed(upstreams: tuple[Upstream, ...], api: str, metric: str, namespace: str | None) -> Upstream | None:
    """The upstream a request goes to (the first whose patterns match), or None: promhpa's own."""
    for u in upstreams:
        if u.routes(api, metric, namespace):
            return u
    return None
