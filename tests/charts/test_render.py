"""charts/promhpa rendered by the real helm: lint, schema, TLS, RBAC and rules, and every
option's output accepted by the real kube-apiserver (server-side dry run)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa

from adapter.serving.default_rules import DEFAULT_RULES
from localcluster import Cluster
from rules.config import parse_config
from tests.charts.chart import CHART
from tests.charts.chart import CI_VALUES
from tests.charts.chart import as_list
from tests.charts.chart import helm
from tests.charts.chart import of_kind
from tests.charts.chart import render
from tests.charts.chart import stand_in_crds

URL = "--set=prometheus.url=http://prometheus.monitoring.svc:9090"


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.stem)
def test_helm_lint_is_clean(values: Path) -> None:
    out = helm("lint", str(CHART), "--strict", "-f", str(values))
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout, out.stdout


@pytest.mark.cluster
@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.stem)
def test_rendered_manifests_are_accepted_by_the_apiserver(cluster: Cluster, values: Path) -> None:
    cluster.kubectl("apply", "-f", "-", input=as_list(stand_in_crds()))
    cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    cluster.kubectl("create", "namespace", "promhpa-render", check=False)
    docs = render("-f", str(values), namespace="promhpa-render")
    for ns in {d["metadata"].get("namespace") for d in docs} - {None}:  # namespaceOverride's
        cluster.kubectl("create", "namespace", ns, check=False)
    out = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=as_list(docs), check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("(server dry run)") == len(docs)


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.stem)
def test_apiservices_never_skip_tls_verification(values: Path) -> None:
    docs = render("-f", str(values))
    apis = of_kind(docs, "APIService")
    if "external-endpoint" not in values.stem and "controller-only" not in values.stem:
        assert apis, "no APIService rendered"
    for api in apis:
        assert not api["spec"].get("insecureSkipTLSVerify"), api["metadata"]["name"]
        injected = "cert-manager.io/inject-ca-from" in (api["metadata"].get("annotations") or {})
        assert api["spec"].get("caBundle") or injected, api["metadata"]["name"]


def test_default_install_registers_custom_v1beta1_v1beta2_and_external() -> None:
    names = sorted(a["metadata"]["name"] for a in of_kind(render(URL), "APIService"))
    assert names == [
        "v1beta1.custom.metrics.k8s.io",
        "v1beta1.external.metrics.k8s.io",
        "v1beta2.custom.metrics.k8s.io",
    ]


def test_resource_metrics_api_is_registered_only_when_asked() -> None:
    docs = render(URL, "--set=apiServices.resource=true")
    assert "v1beta1.metrics.k8s.io" in [a["metadata"]["name"] for a in of_kind(docs, "APIService")]


def test_generated_certificate_serves_the_service_name_and_chains_to_the_ca_bundle() -> None:
    docs = render(URL, namespace="monitoring", release="promhpa")
    secret = of_kind(docs, "Secret")[0]
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "promhpa-adapter.monitoring.svc" in names.get_values_for_type(x509.DNSName)
    apis = of_kind(docs, "APIService")
    assert len(apis) == 3
    for api in apis:
        ca = x509.load_pem_x509_certificate(base64.b64decode(api["spec"]["caBundle"]))
        key = ca.public_key()
        assert isinstance(key, rsa.RSAPublicKey)
        assert cert.signature_hash_algorithm is not None
        key.verify(
            cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm
        )
        assert api["spec"]["service"] == {"name": "promhpa-adapter", "namespace": "monitoring", "port": 443}


def rules_of(docs: list[dict[str, Any]]) -> str:
    return str(of_kind(docs, "ConfigMap")[0]["data"]["config.yaml"])


def test_default_rules_are_prometheus_adapters_defaults() -> None:
    rendered = rules_of(render(URL))
    assert yaml.safe_load(rendered) == yaml.safe_load(DEFAULT_RULES)
    parse_config(rendered, "<chart defaults>")  # and the adapter loads them


def test_rules_from_values_are_appended_and_valid() -> None:
    docs = render(URL, "--set=rules.default=true", "-f", str(CHART / "ci" / "resource-metrics-values.yaml"))
    config = yaml.safe_load(rules_of(docs))
    assert len(config["rules"]) == 7  # prometheus-adapter's six, then the user's
    assert config["rules"][-1]["seriesQuery"] == 'http_requests_total{namespace!="",pod!=""}'
    assert config["externalRules"][0]["seriesQuery"] == '{__name__="queue_depth"}'
    assert config["resourceRules"]["window"] == "3m"  # the user's replace the defaults
    parse_config(rules_of(docs), "<chart values>")


def test_existing_configmap_replaces_the_rules() -> None:
    docs = render(URL, "--set=rules.existingConfigMap=my-rules")
    assert of_kind(docs, "ConfigMap") == []
    deployment = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "rules", "configMap": {"name": "my-rules"}} in volumes


def test_missing_prometheus_url_fails_with_what_to_set() -> None:
    out = helm("template", "r", str(CHART), check=False)
    assert out.returncode != 0
    assert "prometheus.url is required" in out.stderr
    assert "--set prometheus.url=" in out.stderr


REFUSED = {  # a value the chart refuses -> (the flags, what its message names)
    "a misspelled key, by the schema": (
        ["--set=controler.enabled=false"],
        "additional properties 'controler' not allowed",
    ),
    "an existing Secret without its CA bundle": (
        ["--set=tls.mode=existingSecret", "--set=tls.existingSecret.name=x"],
        "tls.existingSecret.caBundle",
    ),
    "two controllers without leader election": (["--set=controller.leaderElect=false"], "leaderElect"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_bad_value_is_refused_naming_what_to_fix(case: str) -> None:
    flags, message = REFUSED[case]
    out = helm("template", "r", str(CHART), URL, *flags, check=False)
    assert out.returncode != 0
    assert message in out.stderr


def test_pods_run_as_non_root_with_a_read_only_root() -> None:
    deployments = of_kind(render(URL), "Deployment")
    assert len(deployments) == 2  # the adapter and the controller
    for d in deployments:
        pod = d["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        for c in pod["containers"]:
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"] == {"drop": ["ALL"]}
            assert c["livenessProbe"]
            assert c["readinessProbe"]
            assert c["resources"]["requests"]


def test_controller_flags_follow_the_values() -> None:
    docs = render("-f", str(CHART / "ci" / "beside-builtin-controller-values.yaml"))
    controller = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("controller"))
    args = controller["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--dry-run" in args
    assert "--hpa-selector=autoscaler=promhpa" in args
    assert "--feature-gates=HPAConfigurableTolerance=true" in args
    assert not any(a.startswith("--leader-elect") for a in args)


def controller_args(*flags: str) -> list[str]:
    docs = render(URL, *flags)
    controller = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("controller"))
    return list(controller["spec"]["template"]["spec"]["containers"][0]["args"])


def test_controller_decides_as_the_api_servers_release_unless_told() -> None:
    assert not any(a.startswith("--emulated-version") for a in controller_args())
    assert "--emulated-version=1.35" in controller_args("--set=controller.emulatedVersion=1.35")


def test_an_emulated_version_that_is_not_one_is_refused_by_the_schema() -> None:
    out = helm("template", "r", str(CHART), URL, "--set=controller.emulatedVersion=latest", check=False)
    assert out.returncode != 0
    assert "emulatedVersion" in out.stderr


def test_controller_may_only_touch_its_own_lease() -> None:
    role = of_kind(render(URL, release="r"), "Role")[0]
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["r-promhpa-controller"],
            "verbs": ["get", "update"],
        }
    ]


def test_extra_volumes_reach_the_adapter_for_backend_credentials() -> None:
    docs = render(
        URL,
        "--set=adapter.extraVolumes[0].name=mimir",
        "--set=adapter.extraVolumes[0].secret.secretName=mimir-auth",
        "--set=adapter.extraVolumeMounts[0].name=mimir",
        "--set=adapter.extraVolumeMounts[0].mountPath=/etc/mimir",
    )
    deployment = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "mimir", "secret": {"secretName": "mimir-auth"}} in pod["volumes"]
    assert {"name": "mimir", "mountPath": "/etc/mimir"} in pod["containers"][0]["volumeMounts"]


def adapter_args(*flags: str) -> list[str]:
    docs = render(URL, *flags)
    adapter = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))
    return list(adapter["spec"]["template"]["spec"]["containers"][0]["args"])


def test_sigv4_values_sign_the_adapters_requests() -> None:
    role = "arn:aws:iam::123456789012:role/amp-query"
    args = adapter_args("--set=prometheus.sigv4.region=us-west-2", f"--set=prometheus.sigv4.roleArn={role}")
    assert "--prometheus-sigv4-region=us-west-2" in args
    assert "--prometheus-sigv4-service=aps" in args
    assert "--prometheus-sigv4-role-arn=arn:aws:iam::123456789012:role/amp-query" in args
    assert not any(a.startswith("--prometheus-sigv4") for a in adapter_args())


def test_google_auth_value_gives_the_adapter_its_flag() -> None:
    assert "--prometheus-google-auth" in adapter_args("--set=prometheus.googleAuth=true")
    assert "--prometheus-google-auth" not in adapter_args()


def _adapter_pod(*flags: str) -> dict:
    docs = render(URL, *flags)
    return next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))["spec"][
        "template"
    ]


def test_azure_workload_identity_values_give_the_flag_and_the_webhooks_pod_label() -> None:
    flags = ("--set=prometheus.azure.enabled=true", "--set=prometheus.azure.cloud=AzureChina")
    args = adapter_args(*flags)
    assert [a for a in args if a.startswith("--prometheus-azure")] == [
        "--prometheus-azure-auth",
        "--prometheus-azure-cloud=AzureChina",
    ]
    assert _adapter_pod(*flags)["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    assert "azure.workload.identity/use" not in _adapter_pod()["metadata"]["labels"]
    assert not any(a.startswith("--prometheus-azure") for a in adapter_args())


def test_azure_managed_identity_values_name_the_identity_and_leave_the_label_off() -> None:
    flags = (
        "--set=prometheus.azure.enabled=true",
        "--set=prometheus.azure.workloadIdentity=false",
        "--set=prometheus.azure.managedIdentityClientID=0000-1111",
    )
    assert "--prometheus-azure-client-id=0000-1111" in adapter_args(*flags)
    assert "azure.workload.identity/use" not in _adapter_pod(*flags)["metadata"]["labels"]


def _controller_resources(*flags: str) -> dict[str, Any]:
    docs = render(URL, *flags)
    controller = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("controller"))
    return dict(controller["spec"]["template"]["spec"]["containers"][0]["resources"])


def test_the_controllers_memory_is_sized_by_the_hpas_it_manages() -> None:
    """The request above the benchmark's peaks (docs/benchmarks.md: 185 MiB at 1,000 HPAs, 549
    at 10,000), which the old fixed 512Mi limit was not."""
    assert _controller_resources() == {
        "requests": {"cpu": "100m", "memory": "200Mi"},
        "limits": {"memory": "512Mi"},
    }
    big = _controller_resources("--set=controller.expectedHPAs=10000")
    assert big == {"requests": {"cpu": "100m", "memory": "560Mi"}, "limits": {"memory": "1120Mi"}}
    given = {"requests": {"memory": "1Gi"}}
    assert _controller_resources("--set=controller.resources.requests.memory=1Gi") == given


def test_team_tenants_value_names_the_tenants_metricrules_may_read() -> None:
    assert "--team-rule-tenants=platform,shared" in adapter_args("--set=rules.team.tenants={platform,shared}")
    assert not any(a.startswith("--team-rule-tenants") for a in adapter_args())


def test_oauth2_values_give_the_adapter_its_flags_and_the_secret() -> None:
    flags = (
        "--set=prometheus.oauth2.tokenURL=https://idp/token",
        "--set=prometheus.oauth2.clientID=promhpa",
        "--set=prometheus.oauth2.clientSecretSecret=promhpa-oauth2",
        "--set=prometheus.oauth2.scopes={a,b}",
    )
    args = adapter_args(*flags)
    assert "--prometheus-oauth2-token-url=https://idp/token" in args
    assert "--prometheus-oauth2-client-id=promhpa" in args
    assert "--prometheus-oauth2-client-secret-file=/etc/promhpa/prometheus-oauth2/client-secret" in args
    assert "--prometheus-oauth2-scopes=a,b" in args
    docs = render(URL, *flags)
    pod = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))["spec"][
        "template"
    ]["spec"]
    assert {"name": "prometheus-oauth2", "secret": {"secretName": "promhpa-oauth2"}} in pod["volumes"]


def test_oauth2_without_its_client_is_refused_naming_what_to_set() -> None:
    out = helm(
        "template", "r", str(CHART), URL, "--set=prometheus.oauth2.tokenURL=https://idp/token", check=False
    )
    assert out.returncode != 0
    assert "prometheus.oauth2.tokenURL needs prometheus.oauth2.clientID" in out.stderr


def test_workload_identity_annotations_and_labels_reach_the_adapter() -> None:
    """What each cloud's workload identity reads: the ServiceAccount's annotation (EKS IRSA,
    GKE, Azure) and the pod's label (Azure)."""
    docs = render(
        URL,
        "--set=adapter.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/r",
        "--set-string=adapter.podLabels.azure\\.workload\\.identity/use=true",
    )
    sa = next(d for d in of_kind(docs, "ServiceAccount") if d["metadata"]["name"].endswith("adapter"))
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == "arn:aws:iam::1:role/r"
    deployment = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))
    assert deployment["spec"]["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true"


def test_every_value_is_documented() -> None:
    """Each key with a value of its own has a `# --` comment above it (sections need none)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    undocumented = []
    skip_deeper_than: int | None = None
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([A-Za-z_][\w]*):(.*)$", line)
        if not m:
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3).strip()
        if skip_deeper_than is not None and indent > skip_deeper_than:
            continue  # inside a documented value (a default list or map)
        skip_deeper_than = None
        nxt = next((x for x in lines[i + 1 :] if x.strip()), "")
        is_section = not rest and not nxt.strip().startswith("-")
        block = lines[:i]
        while block and block[-1].strip().startswith("#") and not block[-1].strip().startswith("# --"):
            block = block[:-1]
        documented = bool(block) and block[-1].strip().startswith("# --")
        if documented:
            skip_deeper_than = indent
        elif not is_section:
            undocumented.append(f"values.yaml:{i + 1}: {key}")
    assert undocumented == []


def test_schema_knows_every_value() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def walk(v: Any, s: dict[str, Any], path: str) -> list[str]:
        if not isinstance(v, dict) or "properties" not in s:
            return []
        missing = [f"{path}.{k}" for k in v if k not in s["properties"]]
        return missing + [
            m
            for k, sub in v.items()
            if k in s["properties"]
            for m in walk(sub, s["properties"][k], f"{path}.{k}")
        ]

    assert walk(values, schema, "") == []


WEBHOOK_ON = ("--set=rules.webhook.enabled=true", "--set-string=rules.webhook.clientCA=PEM")


def test_rules_webhook_guards_exactly_the_rules_configmap() -> None:
    docs = render(URL, *WEBHOOK_ON, namespace="monitoring", release="promhpa")
    hooks = {h["name"]: h for h in of_kind(docs, "ValidatingWebhookConfiguration")[0]["webhooks"]}
    hook = hooks["rules.promhpa.io"]
    (rules,) = [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-rules")]
    selector = hook["objectSelector"]["matchLabels"]
    assert all(rules["metadata"]["labels"].get(k) == v for k, v in selector.items())
    assert hook["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "monitoring"}
    assert hook["clientConfig"]["service"]["path"] == "/validate/rules"
    assert hook["clientConfig"]["caBundle"] == of_kind(docs, "APIService")[0]["spec"]["caBundle"]
    assert (hook["failurePolicy"], hook["sideEffects"]) == ("Ignore", "None")
    (adapter,) = [d for d in of_kind(docs, "Deployment") if "adapter" in d["metadata"]["name"]]
    args = adapter["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--rules-webhook" in args
    assert "--rules-webhook-client-ca-file=/etc/promhpa/webhook-client-ca/ca.crt" in args
    assert hook["clientConfig"]["service"]["port"] == 8444  # its own listener, not the APIs' port
    (ca,) = [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-webhook-client-ca")]
    assert ca["data"] == {"ca.crt": "PEM"}


def test_the_webhook_guards_metric_rules_too_while_team_rules_are_on() -> None:
    docs = render(URL, *WEBHOOK_ON, namespace="monitoring", release="promhpa")
    hooks = {h["name"]: h for h in of_kind(docs, "ValidatingWebhookConfiguration")[0]["webhooks"]}
    team = hooks["metricrules.promhpa.io"]
    assert team["clientConfig"]["service"]["path"] == "/validate/metricrules"
    assert team["rules"] == [
        {
            "apiGroups": ["promhpa.io"],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["metricrules", "clustermetricrules"],
            "scope": "*",
        }
    ]
    off = render(
        URL, *WEBHOOK_ON, "--set=rules.team.enabled=false", namespace="monitoring", release="promhpa"
    )
    names = [h["name"] for h in of_kind(off, "ValidatingWebhookConfiguration")[0]["webhooks"]]
    assert names == ["rules.promhpa.io"]


def test_team_rules_are_served_and_granted_by_default_and_not_when_off() -> None:
    on = render(URL)
    (adapter,) = [d for d in of_kind(on, "Deployment") if "adapter" in d["metadata"]["name"]]
    assert "--team-rules" in adapter["spec"]["template"]["spec"]["containers"][0]["args"]
    roles = {r["metadata"]["name"] for r in of_kind(on, "ClusterRole")}
    assert {"r-promhpa-adapter-team-rules", "r-promhpa-adapter-metricrules-edit"} <= roles
    off = render(URL, "--set=rules.team.enabled=false")
    (adapter,) = [d for d in of_kind(off, "Deployment") if "adapter" in d["metadata"]["name"]]
    assert "--team-rules" not in adapter["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [r for r in of_kind(off, "ClusterRole") if "team-rules" in r["metadata"]["name"]]


def test_rules_webhook_is_off_by_default() -> None:
    """It answers only the API server's client certificate, which most clusters (every
    managed one) cannot be configured to present: on by default it would refuse them all."""
    docs = render(URL)
    assert _registrations(docs, "adapter") == []
    (adapter,) = [d for d in of_kind(docs, "Deployment") if "adapter" in d["metadata"]["name"]]
    assert "--rules-webhook" not in adapter["spec"]["template"]["spec"]["containers"][0]["args"]


def test_rules_webhook_without_its_client_ca_is_refused() -> None:
    out = helm("template", "r", str(CHART), URL, "--set=rules.webhook.enabled=true", check=False)
    assert out.returncode != 0
    assert "rules.webhook.enabled needs rules.webhook.clientCA" in out.stderr


def _registrations(docs: list[dict[str, Any]], component: str) -> list[dict[str, Any]]:
    """The ValidatingWebhookConfigurations of one component (adapter or controller)."""
    return [w for w in of_kind(docs, "ValidatingWebhookConfiguration") if component in w["metadata"]["name"]]


def _own_kind_webhook(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (hook,) = _registrations(docs, "controller")
    return dict(hook["webhooks"][0])


def test_the_own_kinds_webhook_is_registered_with_a_certificate_for_its_service() -> None:
    docs = render(URL, namespace="monitoring", release="promhpa")
    hook = _own_kind_webhook(docs)
    assert hook["name"] == "horizontalpodautoscalers.autoscaling.promhpa.io"
    assert hook["rules"] == [{
        "apiGroups": ["autoscaling.promhpa.io"], "apiVersions": ["v2"],
        "operations": ["CREATE", "UPDATE"], "resources": ["horizontalpodautoscalers"], "scope": "Namespaced",
    }]  # fmt: skip
    assert (hook["failurePolicy"], hook["sideEffects"], hook["timeoutSeconds"]) == ("Ignore", "None", 5)
    service = hook["clientConfig"]["service"]
    assert service == {
        "name": "promhpa-controller-webhook", "namespace": "monitoring",
        "path": "/validate/horizontalpodautoscalers", "port": 8445,
    }  # fmt: skip
    (svc,) = [s for s in of_kind(docs, "Service") if s["metadata"]["name"] == service["name"]]
    controller = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("controller"))
    pod = controller["spec"]["template"]
    assert all(pod["metadata"]["labels"][k] == v for k, v in svc["spec"]["selector"].items())
    container = pod["spec"]["containers"][0]
    assert {"name": "webhook", "containerPort": 8445, "protocol": "TCP"} in container["ports"]
    assert svc["spec"]["ports"][0]["targetPort"] == "webhook"
    assert "--admission-webhook-port=8445" in container["args"]
    assert "--tls-cert-file=/etc/promhpa/webhook-tls/tls.crt" in container["args"]
    (secret,) = [
        s for s in of_kind(docs, "Secret") if s["metadata"]["name"] == "promhpa-controller-webhook-tls"
    ]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "webhook-tls"]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "promhpa-controller-webhook.monitoring.svc" in names.get_values_for_type(x509.DNSName)
    ca = x509.load_pem_x509_certificate(base64.b64decode(hook["clientConfig"]["caBundle"]))
    key = ca.public_key()
    assert isinstance(key, rsa.RSAPublicKey)
    assert cert.signature_hash_algorithm is not None
    key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)


@pytest.mark.parametrize("off", ["controller.admissionWebhook.enabled=false", "controller.ownKind=off"])
def test_the_own_kinds_webhook_is_left_out_when_off(off: str) -> None:
    docs = render(URL, f"--set={off}")
    assert _registrations(docs, "controller") == []
    assert not [s for s in of_kind(docs, "Service") if s["metadata"]["name"].endswith("-webhook")]
    assert not [a for a in _controller_args(f"--set={off}") if "admission" in a or "tls-cert" in a]


def test_with_cert_manager_the_own_kinds_webhook_gets_a_certificate_and_its_ca_injected() -> None:
    docs = render(URL, "--set=tls.mode=certManager", namespace="monitoring", release="promhpa")
    (cert,) = [
        c for c in of_kind(docs, "Certificate") if c["metadata"]["name"] == "promhpa-controller-webhook-tls"
    ]
    assert cert["spec"]["dnsNames"][0] == "promhpa-controller-webhook.monitoring.svc"
    assert cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": "promhpa-adapter-ca"}
    (hook,) = _registrations(docs, "controller")
    assert hook["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "monitoring/promhpa-controller-webhook-tls"
    }
    assert "caBundle" not in hook["webhooks"][0]["clientConfig"]


def _controller_args(*values: str) -> list[str]:
    docs = render(URL, *values)
    controller = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("controller"))
    return list(controller["spec"]["template"]["spec"]["containers"][0]["args"])


def test_the_charts_defaults_run_the_controller_in_shadow_mode() -> None:
    """Installed beside a built-in HPA controller that cannot be turned off, the defaults
    must write nothing: shadow mode unless the user chooses active."""
    args = _controller_args()
    assert "--dry-run" in args
    assert not any(a.startswith("--second-writer") for a in args)


def test_active_mode_is_an_explicit_choice_and_keeps_the_second_writer_guard() -> None:
    args = _controller_args("--set=controller.mode=active")
    assert "--dry-run" not in args
    assert "--second-writer-quiet-period=5m" in args


def test_the_older_dry_run_switch_still_chooses_the_mode() -> None:
    assert "--dry-run" not in _controller_args("--set=controller.dryRun=false")
    assert "--dry-run" in _controller_args("--set=controller.mode=active", "--set=controller.dryRun=true")


def test_an_unknown_mode_is_refused_by_the_schema() -> None:
    out = helm("template", "r", str(CHART), URL, "--set=controller.mode=activ", check=False)
    assert out.returncode != 0
    assert "mode" in out.stderr


def test_upstreams_go_into_the_rule_file_and_grant_the_adapter_read_on_the_metrics_apis() -> None:
    up = '--set-json=rules.upstreams=[{"name":"keda","url":"https://keda.keda.svc","external":["^s0-.*$"]}]'
    docs = render(URL, up)
    (rules,) = [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("-rules")]
    parsed = yaml.safe_load(rules["data"]["config.yaml"])
    assert parsed["upstreams"] == [{"name": "keda", "url": "https://keda.keda.svc", "external": ["^s0-.*$"]}]
    from rules.config import parse_config

    assert parse_config(rules["data"]["config.yaml"]).upstreams[0].name == "keda"  # the adapter reads it
    role = next(r for r in of_kind(docs, "ClusterRole") if r["metadata"]["name"].endswith("upstream-reader"))
    assert role["rules"] == [
        {
            "apiGroups": ["custom.metrics.k8s.io", "external.metrics.k8s.io"],
            "resources": ["*"],
            "verbs": ["get", "list"],
        }
    ]
    assert not [
        r for r in of_kind(render(URL), "ClusterRole") if r["metadata"]["name"].endswith("upstream-reader")
    ]


def test_both_service_monitors_scrape_over_tls_with_the_token_and_only_metrics_is_granted() -> None:
    docs = render("-f", str(CHART / "ci" / "service-monitor-values.yaml"))
    monitors = {m["metadata"]["name"]: m for m in of_kind(docs, "ServiceMonitor")}
    assert len(monitors) == 2
    for m in monitors.values():
        (endpoint,) = m["spec"]["endpoints"]
        assert endpoint["scheme"] == "https"
        assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    reader = next(r for r in of_kind(docs, "ClusterRole") if r["metadata"]["name"].endswith("metrics-reader"))
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]  # not /debug/*
    controller = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("controller"))
    c = controller["spec"]["template"]["spec"]["containers"][0]
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics", "scheme": "HTTPS"}
    assert "--kube-api-qps=20" in c["args"]
    assert controller["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 30
    assert "--shutdown-grace-period=20s" in c["args"]


def test_a_render_without_an_image_fails_and_says_how_to_build_one() -> None:
    out = helm("template", "r", str(CHART), URL, check=False, image=False)
    assert out.returncode != 0
    assert "image.repository is not set: promhpa publishes no image" in out.stderr
    assert "make image" in out.stderr
