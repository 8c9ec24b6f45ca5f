"""``python -m adapter check-config``: validation alone, and what each rule would serve."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from localcluster import Cluster
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import python_m
from tests.support import wait_until


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return python_m("adapter", "check-config", *args)


def test_bad_file_names_line_and_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("rules:\n- seriesQuery: x\n  metricsQuery: y\n  resources: {templte: <<.Resource>>}\n")
    out = run(str(cfg))
    assert out.returncode == 2
    assert f"{cfg}:4: rules[0].resources.templte: unknown key (did you mean 'template'?)" in out.stderr


def test_shows_metrics_and_queries_with_a_prometheus(
    tmp_path: Path, exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    exporter.set('cc_requests_total{namespace="default",pod="web-0"}', 5)
    wait_until(lambda: prometheus.query("cc_requests_total") != [], what="scrape")
    cfg = tmp_path / "ok.yaml"
    cfg.write_text("""rules:
- seriesQuery: '{__name__="cc_requests_total"}'
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
""")
    out = run(str(cfg), f"--prometheus-url={prometheus.url}")
    assert out.returncode == 0, out.stderr
    assert "pods/cc_requests_per_second" in out.stdout
    assert 'sum(rate(cc_requests_total{namespace="default",pod="example"}[2m])) by (pod)' in out.stdout
    assert "namespaces/cc_requests_per_second" in out.stdout


def write(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "rules.yaml"
    cfg.write_text(text)
    return cfg


def test_misspelled_template_field_is_an_error_with_line_and_hint(tmp_path: Path) -> None:
    cfg = write(
        tmp_path,
        """rules:
- seriesQuery: 'x'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatcher>>})'
""",
    )
    out = run(str(cfg))
    assert out.returncode == 2
    assert (
        f"{cfg}:4: rules[0].metricsQuery: unknown template field .LabelMatcher (did you mean .LabelMatchers?)"
        in out.stderr
    )


def test_unknown_resource_is_an_error_without_prometheus(tmp_path: Path) -> None:
    cfg = write(
        tmp_path,
        """rules:
- seriesQuery: 'x'
  resources: {overrides: {namespace: {resource: namespacez}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
""",
    )
    out = run(str(cfg))
    assert out.returncode == 1
    assert (
        "rules.yaml:3: rules[0].resources.overrides.namespace: unknown resource 'namespacez' "
        "(did you mean 'namespaces'?)" in out.stderr
    )
    assert "skipped (no --prometheus-url)" in out.stdout


def test_query_prometheus_rejects_is_an_error_with_prometheus_message(
    tmp_path: Path, exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    exporter.set('cc_broken{namespace="default",pod="web-0"}', 1)
    wait_until(lambda: prometheus.query("cc_broken") != [], what="scrape")
    cfg = write(
        tmp_path,
        """rules:
- seriesQuery: '{__name__="cc_broken"}'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m]) by (<<.GroupBy>>)'
""",
    )
    out = run(str(cfg), f"--prometheus-url={prometheus.url}")
    assert out.returncode == 1, out.stdout
    assert f"{cfg}:4: rules[0].metricsQuery: Prometheus rejects the rendered query" in out.stderr
    assert "parse error" in out.stderr


GROUPED_RULES = """rules:
- seriesQuery: 'x'
  resources:
    overrides:
      namespace: {resource: namespace}
      deploy: {group: apps, resource: deploymentz}
      widget: {group: checks.promhpa.io, resource: widget}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def test_without_a_cluster_custom_resources_are_named_as_skipped(tmp_path: Path) -> None:
    out = run(str(write(tmp_path, GROUPED_RULES)))
    assert out.returncode == 0, out.stderr
    assert "skipped (no --kubeconfig): custom resources against the cluster's discovery" in out.stdout


def test_resources_are_proven_against_the_clusters_discovery(cluster: Cluster, tmp_path: Path) -> None:
    cfg = write(tmp_path, GROUPED_RULES)
    out = run(str(cfg), f"--kubeconfig={cluster.kubeconfig}")
    assert out.returncode == 1, out.stdout
    assert (
        f"{cfg}:6: rules[0].resources.overrides.deploy: unknown resource 'deploymentz' in group 'apps' "
        "(did you mean 'deployments'?)" in out.stderr
    )
    assert (
        f"{cfg}:7: rules[0].resources.overrides.widget: unknown resource 'widget' in group "
        "'checks.promhpa.io': the cluster serves no such API group" in out.stderr
    )
    assert "overrides.namespace" not in out.stderr  # the core group's namespaces exist

    # once the cluster serves the custom resource (and the typo is mended) the file passes
    crd = widget_crd()
    cluster.kubectl("apply", "-f", "-", input=json.dumps(crd))
    try:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}")
        cfg.write_text(GROUPED_RULES.replace("deploymentz", "deployment"))
        out = run(str(cfg), f"--kubeconfig={cluster.kubeconfig}")
        assert out.returncode == 0, out.stderr
        assert "OK" in out.stdout
    finally:
        cluster.kubectl("delete", "crd", crd["metadata"]["name"], "--wait=false")


def test_an_unusable_kubeconfig_is_one_error_line(tmp_path: Path) -> None:
    out = run(str(write(tmp_path, GROUPED_RULES)), f"--kubeconfig={tmp_path}/missing")
    assert out.returncode == 2  # the input is unusable (shared.exitcodes)
    assert out.stderr.startswith(f"error: kubeconfig {tmp_path}/missing: cannot read it")
    assert "Traceback" not in out.stderr


OPEN_SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.checks.promhpa.io"},
        "spec": {
            "group": "checks.promhpa.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": OPEN_SCHEMA},
                }
            ],
        },
    }


THREE_MISTAKES = """rules:
- seriesQuery: 'queue_depth{'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_total$', as: "$1_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m]) by (<<.GroupBy>>)'
- seriesQuery: 'x'
  resourcez: {}
  metricsQuery: 'x'
- seriesQuery: 'http_requests_total{namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  name: {matches: '^(.*)_total$', as: "${2}"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def test_every_error_of_a_file_is_reported_in_one_run_with_its_line(tmp_path: Path) -> None:
    cfg = write(tmp_path, THREE_MISTAKES)
    out = run(str(cfg))
    assert out.returncode == 2
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error: ")]
    assert errors == [
        f"error: {cfg}:7: rules[1].resourcez: unknown key (did you mean 'resources'?)",
        f"error: {cfg}:2: rules[0].seriesQuery: 'queue_depth{{' is not PromQL: "
        "unexpected end of input inside braces",
        f'error: {cfg}:5: rules[0].metricsQuery: renders to \'sum(rate(queue_depth{{namespace="default",'
        'pod="example"}[2m]) by (pod)\', which is not PromQL: unclosed left parenthesis',
        f"error: {cfg}:4: rules[0].name.as: $1_per_second refers to a group named '1_per_second', which "
        "'matches' does not define: Go expands it to nothing; write ${1}_per_second for group 1 followed "
        "by '_per_second'",
        f"error: {cfg}:11: rules[2].name.as: ${{2}} refers to group 2, but 'matches' has 1 capture group(s): "
        "Go expands it to nothing",
    ]
    assert out.stdout.strip().endswith("5 error(s)")


def test_go_regex_syntax_is_accepted_and_perl_only_syntax_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "rules.yaml"
    ok = (
        "rules:\n- seriesQuery: 'x'\n  resources: {template: <<.Resource>>}\n"
        "  name: {matches: '%s'}\n  metricsQuery: 'x'\n"
    )
    cfg.write_text(ok % r"^[[:alpha:]_]+_total$")
    assert run(str(cfg)).returncode == 0
    cfg.write_text(ok % r"^\p{L}+_total$")
    assert run(str(cfg)).returncode == 0
    cfg.write_text(ok % r"^(?!x)(.*)$")
    out = run(str(cfg))
    assert out.returncode == 2
    assert (
        "rules[0].name.matches: invalid regular expression '^(?!x)(.*)$': invalid perl operator: (?!"
        in out.stderr
    )
    assert "Warning" not in out.stderr


def test_an_empty_file_is_warned_about(tmp_path: Path) -> None:
    cfg = write(tmp_path, "")
    out = run(str(cfg))
    assert out.returncode == 0
    assert "warning: " in out.stderr
    assert "no rules: the adapter would serve no custom, external or resource metrics" in out.stderr
    assert "OK (1 warning(s))" in out.stdout


def test_a_utf16_or_binary_file_is_one_error_line(tmp_path: Path) -> None:
    utf16, binary = tmp_path / "utf16.yaml", tmp_path / "binary.yaml"
    utf16.write_bytes("rules: []\n".encode("utf-16"))
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    for path, said in ((utf16, "is UTF-16 encoded; save it as UTF-8"), (binary, "is not a text file")):
        out = run(str(path))
        assert out.returncode == 2
        assert out.stderr.startswith(f"error: {path}: {said}")
        assert "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


TEN_MISTAKES = """rules:
- seriesQuery: 'jobs_waiting{namespace!=""}'
  nmae: {matches: '^(.*)$'}
  metricQuery: 'sum(<<.Series>>)'
  resources: {overides: {namespace: {resource: namespace}}}
- seriesQuery: 'x'
  seriesFilters: [{is: '(unclosed'}]
  resources: {template: '<<.Group>>'}
  metricsQuery: 'sum(<<.Seriez>>)'
  absent: never
externalRules:
- seriesQuery: 'y'
  metricsQuery: 'sum(<<.Series>>)'
  name: {matches: '^(a)(b)$'}
  backend: [not, a, string]
- seriesQuery: 'z'
"""


def test_ten_mistakes_in_a_file_are_ten_lines_in_one_run(tmp_path: Path) -> None:
    """Several in one rule too: a misspelled key does not hide the next one."""
    cfg = write(tmp_path, TEN_MISTAKES)
    out = run(str(cfg))
    assert out.returncode == 2
    errors = [ln.split(": ", 2)[1:] for ln in out.stderr.splitlines() if ln.startswith("error: ")]
    where = sorted(f"{loc.rsplit(':', 1)[1]} {what.split(':')[0]}" for loc, what in errors)
    assert where == sorted(
        [
            "3 rules[0].nmae",
            "4 rules[0].metricQuery",
            "5 rules[0].resources.overides",
            "7 rules[1].seriesFilters[0].is",
            "8 rules[1].resources.template",
            "9 rules[1].metricsQuery",
            "10 rules[1].absent",
            "14 externalRules[0].name.as",
            "15 externalRules[0].backend",
            "16 externalRules[1].metricsQuery",
        ]
    ), out.stderr


def test_an_unreachable_prometheus_is_one_line_naming_the_rules_it_left_unchecked(tmp_path: Path) -> None:
    """Port 1 on loopback: a real connection, refused at once."""
    cfg = tmp_path / "rules.yaml"
    rule = (
        '- seriesQuery: \'{n}{{namespace!="",pod!=""}}\'\n'
        "  resources: {{overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}}}\n"
        "  metricsQuery: sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)\n"
    )
    cfg.write_text("rules:\n" + "".join(rule.format(n=n) for n in "abc"))
    out = run(str(cfg), "--prometheus-url=http://127.0.0.1:1")
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1, out.stderr
    assert "Connection refused" in errors[0]
    assert "3 rule(s) not checked against it: rules[0], rules[1], rules[2]" in errors[0]
    assert "HTTPConnectionPool" not in errors[0]
    assert out.returncode == 1


def test_a_prometheus_url_that_is_not_one_is_a_usage_error(tmp_path: Path) -> None:
    cfg = write(tmp_path, "rules: []\n")
    out = run(str(cfg), "--prometheus-url=not-a-url")
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        == "error: --prometheus-url=not-a-url is not an http(s) URL (e.g. http://prometheus:9090)"
    )


def test_a_dash_reads_the_rules_from_standard_input(tmp_path: Path) -> None:
    rules = "rules:\n- seriesQuery: x\n  metricsQuery: y\n  resourcez: {}\n"
    out = python_m("adapter", "check-config", "-", input=rules)
    assert out.returncode == 2
    assert "error: <stdin>:4: rules[0].resourcez: unknown key (did you mean 'resources'?)" in out.stderr


def test_an_unreadable_credential_file_is_an_error_naming_the_backend_line_and_key(
    tmp_path: Path, prometheus: PrometheusProcess
) -> None:
    cfg = write(
        tmp_path,
        f"""backends:
- name: mimir
  url: {prometheus.url}
  username: adapter
  passwordFile: {tmp_path / "missing" / "password"}
externalRules:
- seriesQuery: '{{__name__="jobs"}}'
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}})'
  backend: mimir
""",
    )
    out = run(str(cfg), f"--prometheus-url={prometheus.url}")
    assert out.returncode == 1, out.stdout + out.stderr
    assert (
        f"{cfg}:2: backends[0].passwordFile: cannot read {tmp_path / 'missing' / 'password'}: "
        "No such file or directory (mount the Secret holding it" in out.stderr
    )


def test_two_ways_to_authenticate_a_backend_are_refused_with_line_and_key(tmp_path: Path) -> None:
    cfg = write(
        tmp_path,
        """backends:
- name: amp
  url: https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1
  bearerTokenFile: /var/run/secrets/token
  sigv4: {region: us-west-2}
""",
    )
    out = run(str(cfg))
    assert out.returncode == 2
    assert (
        f"{cfg}:5: backends[0].sigv4: a backend authenticates one way: a bearer token ('bearerTokenFile') "
        "or SigV4 signing ('sigv4'), not both; keep one" in out.stderr
    )


def test_the_prometheus_flags_authenticate_check_config_as_they_do_the_adapter(
    tmp_path: Path, exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    """The adapter's own Prometheus flags on check-config: here, Basic auth through a
    recording proxy (the same flags and settings as the adapter's; SigV4's are in
    tests/promclient/test_sigv4_live.py)."""
    from tests.support import Recorder

    exporter.set('cc_auth_total{namespace="default"}', 1)
    wait_until(lambda: prometheus.query("cc_auth_total") != [], what="scrape")
    (tmp_path / "password").write_text("s3cret\n")
    cfg = write(
        tmp_path,
        """externalRules:
- seriesQuery: '{__name__="cc_auth_total"}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
""",
    )
    with Recorder(prometheus.url) as proxy:
        out = run(str(cfg), f"--prometheus-url={proxy.url}", "--prometheus-auth-username=adapter",
                  f"--prometheus-auth-password-file={tmp_path / 'password'}")  # fmt: skip
        calls = list(proxy.calls)
    assert out.returncode == 0, out.stderr
    assert calls
    assert all(headers.get("Authorization") == "Basic YWRhcHRlcjpzM2NyZXQ=" for _, _, headers in calls)
