"""The rule file's ``backends``: named Prometheus-compatible endpoints a rule can pick
(our extension of prometheus-adapter's format), and the check that every rule's
``backend:`` names one of them.

How to reach a backend (its URL, headers, TLS and credentials) is read here and nowhere
else, so a new way to authenticate is one key in ``_BACKEND_KEYS`` and one field in
``Backend``, checked with the line and key like the rest of the file.
"""

from __future__ import annotations

import difflib
import re

import yaml

from shared.urls import is_http_url

from .backend import (
    AZURE_CLOUDS,
    HEADER_NAME,
    MONITORING_READ,
    AzureConfig,
    Backend,
    GoogleConfig,
    OAuth2Config,
    SigV4Config,
    TenantHeader,
)
from .reader import Checker, duration_seconds, named_url, optional

_BACKEND_KEYS = {
    "name", "url", "headers", "params", "timeout", "method", "caFile", "bearerTokenFile",
    "clientCertFile", "clientKeyFile", "username", "passwordFile", "insecureSkipTLSVerify",
    "sigv4", "google", "oauth2", "azure", "tenantHeader",
}  # fmt: skip
_SIGV4_KEYS = {"region", "service", "roleARN"}
_GOOGLE_KEYS = {"scopes"}
_AZURE_KEYS = {"cloud", "audience", "clientID"}
_TENANT_KEYS = {"name", "from", "namespaces", "default"}
_OAUTH2_KEYS = {"tokenURL", "clientID", "clientSecretFile", "scopes", "endpointParams"}
# one way to say who we are: each of these excludes the others
_AUTH = {
    "bearerTokenFile": "a bearer token", "username": "Basic auth", "sigv4": "SigV4 signing",
    "google": "Google's credentials", "oauth2": "OAuth2 client credentials",
    "azure": "Microsoft Entra ID tokens",
}  # fmt: skip
# Mimir's and Cortex's tenant IDs: up to 150 of these characters; '|' joins several (federation)
_TENANT = re.compile(r"^[A-Za-z0-9!_.*'()|-]{1,150}$")


def _pairs(c: Checker, node: yaml.Node, path: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(node, yaml.MappingNode):
        raise c.fail(node, path, "must be a mapping of name -> value")
    return tuple((str(k.value), c.string(v, f"{path}.{k.value}")) for k, v in node.value)


def parse_backends(c: Checker, node: yaml.Node) -> tuple[Backend, ...]:
    out: list[Backend] = []
    for i, n in enumerate(c.seq(node, "backends")):
        path = f"backends[{i}]"
        m = c.mapping(n, path, _BACKEND_KEYS)
        name, url = named_url(c, n, m, path, {b.name for b in out}, "backend {name!r} is defined twice")
        method = c.string(m["method"], f"{path}.method").upper() if "method" in m else None
        if method not in (None, "GET", "POST"):
            raise c.fail(m["method"], f"{path}.method", "must be GET or POST")

        if ("username" in m) != ("passwordFile" in m):
            raise c.fail(n, path, "'username' and 'passwordFile' go together")
        ways = sorted((k for k in _AUTH if k in m), key=lambda k: m[k].start_mark.line)  # the later one errs
        if len(ways) > 1:
            a, b = ways[:2]
            raise c.fail(
                m[b], f"{path}.{b}",
                f"a backend authenticates one way: {_AUTH[a]} ('{a}') or {_AUTH[b]} ('{b}'), not both; "
                "keep one (a second way needs a second backend)",
            )  # fmt: skip
        out.append(
            Backend(
                name=name,
                url=url,
                headers=_pairs(c, m["headers"], f"{path}.headers") if "headers" in m else (),
                params=_pairs(c, m["params"], f"{path}.params") if "params" in m else (),
                timeout=duration_seconds(c, m["timeout"], f"{path}.timeout") if "timeout" in m else None,
                method=method,
                ca_file=optional(c, m, "caFile", path),
                bearer_token_file=optional(c, m, "bearerTokenFile", path),
                client_cert=optional(c, m, "clientCertFile", path),
                client_key=optional(c, m, "clientKeyFile", path),
                username=optional(c, m, "username", path),
                password_file=optional(c, m, "passwordFile", path),
                insecure_skip_tls_verify=(
                    c.boolean(m["insecureSkipTLSVerify"], f"{path}.insecureSkipTLSVerify")
                    if "insecureSkipTLSVerify" in m
                    else False
                ),
                sigv4=parse_sigv4(c, m["sigv4"], f"{path}.sigv4") if "sigv4" in m else None,
                google=parse_google(c, m["google"], f"{path}.google") if "google" in m else None,
                oauth2=parse_oauth2(c, m["oauth2"], f"{path}.oauth2") if "oauth2" in m else None,
                azure=parse_azure(c, m["azure"], f"{path}.azure") if "azure" in m else None,
                tenant_header=parse_tenant_header(c, m, path) if "tenantHeader" in m else None,
                line=n.start_mark.line + 1,
            )
        )
    return tuple(out)


def parse_sigv4(c: Checker, node: yaml.Node, path: str) -> SigV4Config:
    m = c.mapping(node, path, _SIGV4_KEYS)
    if "region" not in m:
        raise c.fail(node, path, "needs 'region', the workspace's AWS region (e.g. region: us-west-2)")
    region = c.string(m["region"], f"{path}.region")
    if not region:
        raise c.fail(m["region"], f"{path}.region", "must name the workspace's AWS region (e.g. us-west-2)")
    service = c.string(m["service"], f"{path}.service") if "service" in m else "aps"
    role = optional(c, m, "roleARN", path)
    if role is not None and not role.startswith("arn:"):
        raise c.fail(m["roleARN"], f"{path}.roleARN", "must be a role's ARN (arn:aws:iam::ACCOUNT:role/NAME)")
    return SigV4Config(region=region, service=service or "aps", role_arn=role)


def parse_google(c: Checker, node: yaml.Node, path: str) -> GoogleConfig:
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return GoogleConfig()  # `google:` alone
    m = c.mapping(node, path, _GOOGLE_KEYS)
    if "scopes" not in m:
        return GoogleConfig()
    scopes = tuple(
        c.string(n, f"{path}.scopes[{i}]") for i, n in enumerate(c.seq(m["scopes"], f"{path}.scopes"))
    )
    if not scopes:
        raise c.fail(
            m["scopes"], f"{path}.scopes", f"must name at least one scope (the default is {MONITORING_READ})"
        )
    return GoogleConfig(scopes=scopes)


def parse_tenant_header(c: Checker, backend: dict[str, yaml.Node], backend_path: str) -> TenantHeader:
    node, path = backend["tenantHeader"], f"{backend_path}.tenantHeader"
    m = c.mapping(node, path, _TENANT_KEYS)
    if "default" not in m:
        raise c.fail(
            node, path,
            "needs 'default', the tenant of requests no namespace asks (nodes, namespace objects, "
            "discovery), e.g. default: platform",
        )  # fmt: skip
    if ("from" in m) == ("namespaces" in m):
        raise c.fail(
            node, path,
            "needs one of 'from: namespace' (each namespace is its tenant) or 'namespaces' (a map "
            "of namespace -> tenant)",
        )  # fmt: skip
    if "from" in m and c.string(m["from"], f"{path}.from") != "namespace":
        raise c.fail(m["from"], f"{path}.from", "must be 'namespace' (or give 'namespaces', a map)")
    name = c.string(m["name"], f"{path}.name") if "name" in m else "X-Scope-OrgID"
    if not HEADER_NAME.match(name):
        raise c.fail(m["name"], f"{path}.name", f"{name!r} is not an HTTP header name")
    if "headers" in backend and isinstance(backend["headers"], yaml.MappingNode):
        for k, _ in backend["headers"].value:
            if str(k.value).lower() == name.lower():
                raise c.fail(
                    k, f"{backend_path}.headers.{k.value}",
                    "is set by tenantHeader too; remove it from 'headers' (tenantHeader's "
                    "'default' is the tenant of requests without a namespace)",
                )  # fmt: skip
    tenants = _pairs(c, m["namespaces"], f"{path}.namespaces") if "namespaces" in m else ()
    default = c.string(m["default"], f"{path}.default")
    for key, value in (("default", default), *((f"namespaces.{k}", v) for k, v in tenants)):
        if not value or not _TENANT.match(value):
            raise c.fail(
                m["default"] if key == "default" else m["namespaces"], f"{path}.{key}",
                f"{value!r} is not a tenant ID (letters, digits and !-_.*'() , '|' to federate)",
            )  # fmt: skip
    return TenantHeader(default=default, name=name, from_namespace="from" in m, namespaces=tenants)


def parse_azure(c: Checker, node: yaml.Node, path: str) -> AzureConfig:
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return AzureConfig()  # `azure:` alone: the public cloud
    m = c.mapping(node, path, _AZURE_KEYS)
    cloud = c.string(m["cloud"], f"{path}.cloud") if "cloud" in m else "AzurePublic"
    if cloud not in AZURE_CLOUDS:
        hint = difflib.get_close_matches(cloud, list(AZURE_CLOUDS), n=1)
        maybe = f"did you mean {hint[0]!r}? " if hint else ""
        raise c.fail(
            m["cloud"], f"{path}.cloud",
            f"unknown cloud {cloud!r} ({maybe}one of {', '.join(AZURE_CLOUDS)}; "
            "another cloud: set 'audience' to its Prometheus audience)",
        )  # fmt: skip
    audience = optional(c, m, "audience", path)
    if audience is not None and not audience.startswith("https://"):
        raise c.fail(
            m["audience"], f"{path}.audience",
            f"{audience!r} must be an https URL (e.g. {AZURE_CLOUDS['AzurePublic'][0]})",
        )  # fmt: skip
    return AzureConfig(cloud=cloud, audience=audience, client_id=optional(c, m, "clientID", path))


def parse_oauth2(c: Checker, node: yaml.Node, path: str) -> OAuth2Config:
    m = c.mapping(node, path, _OAUTH2_KEYS)
    needed = (
        ("tokenURL", "https://idp.example.com/oauth2/token"),
        ("clientID", "promhpa-adapter"),
        ("clientSecretFile", "/etc/promhpa/oauth2/client-secret"),
    )
    for key, example in needed:
        if key not in m:
            raise c.fail(node, path, f"needs '{key}' (e.g. {key}: {example})")
    token_url = c.string(m["tokenURL"], f"{path}.tokenURL")
    if not is_http_url(token_url):
        raise c.fail(m["tokenURL"], f"{path}.tokenURL", f"{token_url!r} must be an http(s) URL")
    scopes: tuple[str, ...] = ()
    if "scopes" in m:
        scopes = tuple(
            c.string(n, f"{path}.scopes[{i}]") for i, n in enumerate(c.seq(m["scopes"], f"{path}.scopes"))
        )
    return OAuth2Config(
        token_url=token_url,
        client_id=c.string(m["clientID"], f"{path}.clientID"),
        client_secret_file=c.string(m["clientSecretFile"], f"{path}.clientSecretFile"),
        scopes=scopes,
        endpoint_params=_pairs(c, m["endpointParams"], f"{path}.endpointParams")
        if "endpointParams" in m
        else (),
    )


def check_backend_refs(c: Checker, top: dict[str, yaml.Node], names: set[str]) -> None:
    """Every ``backend:`` names a defined backend: a typo would otherwise query the default."""
    for key in ("rules", "externalRules"):
        for i, n in enumerate(c.seq(top[key], key) if key in top else []):
            if not isinstance(n, yaml.MappingNode):
                continue
            for k, v in n.value:
                if k.value == "backend":
                    _known_backend(c, v, f"{key}[{i}].backend", names)
    if "resourceRules" in top and isinstance(top["resourceRules"], yaml.MappingNode):
        for k, v in top["resourceRules"].value:
            if k.value == "backend":
                _known_backend(c, v, "resourceRules.backend", names)


def _known_backend(c: Checker, node: yaml.Node, path: str, names: set[str]) -> None:
    name = c.string(node, path)
    if name and name not in names:
        hint = difflib.get_close_matches(name, sorted(names), n=1)
        known = f"did you mean {hint[0]!r}?" if hint else f"defined: {', '.join(sorted(names)) or 'none'}"
        raise c.fail(node, path, f"unknown backend {name!r} ({known}; backends are listed under 'backends')")
