from __future__ import annotations

import pytest

from adapter.serving.default_rules import DEFAULT_RULES
from rules.config import ConfigError
from rules.config import parse_config

GOOD = """
rules:
- seriesQuery: '{__name__=~"^http_requests_.*",namespace!="",pod!=""}'
  seriesFilters: [{isNot: "^http_requests_internal.*"}]
  resources:
    overrides: {namespace: {resource: namespace}, pod: {resource: pod}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__="queue_depth"}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


def test_reads_a_prometheus_adapter_config_unchanged() -> None:
    c = parse_config(GOOD, "adapter.yaml")
    assert len(c.rules) == 1
    assert len(c.external_rules) == 1
    rule = c.rules[0]
    assert rule.naming.as_ == "${1}_per_second"
    assert not rule.series_filters[0].keep("http_requests_internal_total")
    assert rule.resources.overrides["pod"].resource == "pods"
    assert c.external_rules[0].resources.namespaced is False


def test_default_rules_parse() -> None:
    c = parse_config(DEFAULT_RULES, "defaults")
    assert len(c.rules) == 6
    assert c.resource_rules is not None
    assert c.resource_rules.window == "5m"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "rules:\n- seriesQuery: x\n  metricsQuery: y\n  resources: {overides: {}}\n",
            "adapter.yaml:4: rules[0].resources.overides: unknown key (did you mean 'overrides'?)",
        ),
        ("rulez: []\n", "adapter.yaml:1: rulez: unknown key (did you mean 'rules'?)"),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n  metricsQuery: y\n"
            "  name: {matches: '(a'}\n",
            "adapter.yaml:5: rules[0].name.matches: invalid regular expression '(a'",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n"
            "  metricsQuery: '<<range .X>>'\n",
            "adapter.yaml:4: rules[0].metricsQuery: invalid template: unsupported action <<range .X>>",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: kube_pod}\n  metricsQuery: y\n",
            "adapter.yaml:3: rules[0].resources.template: must contain <<.Resource>>",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n  metricsQuery: y\n"
            "  name: {matches: '(a)(b)'}\n",
            "rules[0].name.as: must be set: 'matches' has 2 capture groups",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n  metricsQuery: y\n"
            "  seriesFilters: [{is: a, isNot: b}]\n",
            "rules[0].seriesFilters[0]: needs exactly one of 'is' or 'isNot'",
        ),
        (
            "rules:\n- resources: {template: <<.Resource>>}\n  metricsQuery: y\n",
            "rules[0].seriesQuery: is required",
        ),
        ("rules: {}\n", "adapter.yaml:1: rules: must be a list, got a mapping"),
        ("rules: [\n", "adapter.yaml:2: not valid YAML"),
    ],
)
def test_bad_configs_name_the_line_and_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(text, "adapter.yaml")
    assert message in str(e.value)


BACKENDS = """\
backends:
- name: thanos
  url: http://thanos-query:10902
  params: {partial_response: "false", dedup: "true"}
  method: post
  timeout: 4s
- name: mimir-team-a
  url: https://mimir/prometheus
  headers: {X-Scope-OrgID: team-a}
  username: adapter
  passwordFile: /etc/mimir/password
externalRules:
- seriesQuery: '{__name__="queue_depth"}'
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
  backend: thanos
- seriesQuery: '{__name__="jobs"}'
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
resourceRules:
  backend: mimir-team-a
"""


def test_a_sigv4_backend_defaults_to_the_aps_service() -> None:
    c = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n  sigv4: {region: us-west-2}\n"))
    assert c.backends[0].sigv4 is not None
    assert (c.backends[0].sigv4.region, c.backends[0].sigv4.service) == ("us-west-2", "aps")
    assert c.backends[0].sigv4.role_arn is None


def test_a_google_backend_asks_for_monitoring_read_unless_told() -> None:
    c = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n  google: {}\n"))
    assert c.backends[0].google is not None
    assert c.backends[0].google.scopes == ("https://www.googleapis.com/auth/monitoring.read",)
    c = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n  google: {scopes: [a, b]}\n"))
    assert c.backends[0].google is not None
    assert c.backends[0].google.scopes == ("a", "b")


def test_an_azure_backend_asks_for_its_clouds_prometheus_audience() -> None:
    c = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n  azure: {}\n"))
    a = c.backends[0].azure
    assert a is not None
    assert (a.scope, a.authority) == (
        "https://prometheus.monitor.azure.com/.default",
        "login.microsoftonline.com",
    )
    c = parse_config(
        BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n  azure: {cloud: AzureUSGovernment}\n")
    )
    a = c.backends[0].azure
    assert a is not None
    assert (a.scope, a.authority) == (
        "https://prometheus.monitor.azure.us/.default",
        "login.microsoftonline.us",
    )
    block = "  azure: {cloud: AzureChina, audience: 'https://prom.example.cn/', clientID: abc}\n"
    a = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n" + block)).backends[0].azure
    assert a is not None
    assert (a.scope, a.authority, a.client_id) == (
        "https://prom.example.cn/.default",
        "login.chinacloudapi.cn",
        "abc",
    )


def test_a_tenant_header_reads_its_name_map_and_default() -> None:
    block = "  tenantHeader: {namespaces: {shop: team-a}, default: platform}\n"
    t = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n" + block)).backends[0].tenant_header
    assert t is not None
    assert (t.name, t.default, dict(t.namespaces), t.from_namespace) == (
        "X-Scope-OrgID", "platform", {"shop": "team-a"}, False,
    )  # fmt: skip
    block = "  tenantHeader: {name: X-Tenant, from: namespace, default: platform}\n"
    t = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n" + block)).backends[0].tenant_header
    assert t is not None
    assert (t.name, t.from_namespace) == ("X-Tenant", True)


def test_an_oauth2_backend_reads_its_client_and_parameters() -> None:
    block = (
        "  oauth2:\n    tokenURL: https://idp/token\n    clientID: promhpa\n    clientSecretFile: /s\n"
        "    scopes: [metrics.read]\n    endpointParams: {audience: https://mimir}\n"
    )
    c = parse_config(BACKENDS.replace("  timeout: 4s\n", "  timeout: 4s\n" + block))
    o = c.backends[0].oauth2
    assert o is not None
    assert (o.token_url, o.client_id, o.client_secret_file) == ("https://idp/token", "promhpa", "/s")
    assert (o.scopes, dict(o.endpoint_params)) == (("metrics.read",), {"audience": "https://mimir"})


def test_backends_are_read_and_rules_pick_one() -> None:
    c = parse_config(BACKENDS)
    thanos, mimir = c.backends
    assert (thanos.name, thanos.url, thanos.method, thanos.timeout) == (
        "thanos", "http://thanos-query:10902", "POST", 4.0,
    )  # fmt: skip
    assert dict(thanos.params) == {"partial_response": "false", "dedup": "true"}
    assert dict(mimir.headers) == {"X-Scope-OrgID": "team-a"}
    assert (mimir.username, mimir.password_file) == ("adapter", "/etc/mimir/password")
    assert [r.backend for r in c.external_rules] == ["thanos", ""]  # "" is --prometheus-url
    assert c.resource_rules is not None
    assert c.resource_rules.backend == "mimir-team-a"
    assert c.backend_names() == ["", "thanos", "mimir-team-a"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("backend: thanos", "backend: thanso"),
            "<config>:15: externalRules[0].backend: unknown backend 'thanso' (did you mean 'thanos'?",
        ),
        (
            ("backend: mimir-team-a", "backend: vm"),
            "<config>:19: resourceRules.backend: unknown backend 'vm'",
        ),
        (
            ("url: http://thanos-query:10902", "url: thanos-query:10902"),
            "<config>:3: backends[0].url: 'thanos-query:10902' must be an http(s) URL",
        ),
        (
            ("url: http://thanos-query:10902", "url: 'http://:10902'"),
            "<config>:3: backends[0].url: 'http://:10902' must be an http(s) URL",
        ),
        (
            ("name: mimir-team-a", "name: thanos"),
            "<config>:7: backends[1].name: backend 'thanos' is defined twice",
        ),
        (("name: mimir-team-a", "name: Mimir_A"), "backends[1].name: 'Mimir_A' must be lowercase"),
        (("timeout: 4s", "timeout: soon"), "<config>:6: backends[0].timeout: 'soon' is not a duration"),
        (("method: post", "method: PUT"), "<config>:5: backends[0].method: must be GET or POST"),
        (("  passwordFile: /etc/mimir/password\n", ""), "'username' and 'passwordFile' go together"),
        (("  headers:", "  header:"), "backends[1].header: unknown key (did you mean 'headers'?)"),
        (
            (
                "  passwordFile: /etc/mimir/password\n",
                "  passwordFile: /etc/mimir/password\n  sigv4: {region: x}\n",
            ),
            "<config>:12: backends[1].sigv4: a backend authenticates one way: Basic auth ('username') or "
            "SigV4 signing ('sigv4'), not both",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  google: {}\n  sigv4: {region: x}\n"),
            "<config>:8: backends[0].sigv4: a backend authenticates one way: Google's credentials "
            "('google') or SigV4 signing ('sigv4'), not both",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  oauth2: {tokenURL: https://idp/token, clientID: a}\n"),
            "<config>:7: backends[0].oauth2: needs 'clientSecretFile' (e.g. clientSecretFile: ",
        ),
        (
            (
                "  timeout: 4s\n",
                "  timeout: 4s\n  oauth2: {tokenURL: idp/token, clientID: a, clientSecretFile: /s}\n",
            ),
            "backends[0].oauth2.tokenURL: 'idp/token' must be an http(s) URL",
        ),
        (
            (
                "  timeout: 4s\n",
                "  timeout: 4s\n  oauth2: {tokenURL: 'https://', clientID: a, clientSecretFile: /s}\n",
            ),
            "backends[0].oauth2.tokenURL: 'https://' must be an http(s) URL",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  sigv4: {region: x}\n  azure: {}\n"),
            "<config>:8: backends[0].azure: a backend authenticates one way: SigV4 signing "
            "('sigv4') or Microsoft Entra ID tokens ('azure'), not both",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  azure: {cloud: AzureGovernment}\n"),
            "<config>:7: backends[0].azure.cloud: unknown cloud 'AzureGovernment' (did you mean "
            "'AzureUSGovernment'? one of AzurePublic, AzureUSGovernment, AzureChina",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  azure: {audience: prometheus.monitor.azure.com}\n"),
            "backends[0].azure.audience: 'prometheus.monitor.azure.com' must be an https URL",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  tenantHeader: {from: namespace}\n"),
            "<config>:7: backends[0].tenantHeader: needs 'default', the tenant of requests no namespace asks",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  tenantHeader: {default: p}\n"),
            "backends[0].tenantHeader: needs one of 'from: namespace' (each namespace is its tenant) or "
            "'namespaces'",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  tenantHeader: {from: pod, default: p}\n"),
            "backends[0].tenantHeader.from: must be 'namespace'",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  tenantHeader: {namespaces: {a: 'x y'}, default: p}\n"),
            "backends[0].tenantHeader.namespaces.a: 'x y' is not a tenant ID",
        ),
        (
            (
                "  passwordFile: /etc/mimir/password\n",
                "  passwordFile: /etc/mimir/password\n  tenantHeader: {from: namespace, default: p}\n",
            ),
            "<config>:9: backends[1].headers.X-Scope-OrgID: is set by tenantHeader too; remove it "
            "from 'headers'",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  sigv4: {service: aps}\n"),
            "<config>:7: backends[0].sigv4: needs 'region', the workspace's AWS region",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  sigv4: {region: us-west-2, roleArn: x}\n"),
            "backends[0].sigv4.roleArn: unknown key (did you mean 'roleARN'?)",
        ),
        (
            ("  timeout: 4s\n", "  timeout: 4s\n  sigv4: {region: us-west-2, roleARN: promhpa}\n"),
            "backends[0].sigv4.roleARN: must be a role's ARN (arn:aws:iam::ACCOUNT:role/NAME)",
        ),
    ],
    ids=[
        "rule-typo",
        "resource-rules",
        "url",
        "url-without-host",
        "duplicate",
        "name",
        "timeout",
        "method",
        "password",
        "key",
        "two-auth-blocks",
        "google-and-sigv4",
        "oauth2-secret",
        "oauth2-url",
        "oauth2-url-without-host",
        "sigv4-and-azure",
        "azure-cloud",
        "azure-audience",
        "tenant-default",
        "tenant-source",
        "tenant-from",
        "tenant-id",
        "tenant-and-header",
        "sigv4-region",
        "sigv4-key",
        "sigv4-role",
    ],
)
def test_bad_backends_name_the_line_and_key(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(BACKENDS.replace(*edit))
    assert message in str(e.value)
