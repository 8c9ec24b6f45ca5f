"""``promhpa-controller why NAMESPACE/NAME`` (and ``kubectl promhpa why``): the live decision
of one HPA, explained step by step, from the leader's memory.

Only the Lease holder reconciles, so only it can answer. The holder is found as a client of
the cluster would find it: the Lease's ``holderIdentity`` is ``POD_hostname-uuid`` (the pod's
name first), the Pod names the port of its endpoints (``metrics``), and the request goes
through the API server's port-forward to that pod -- so it works from a laptop on a managed
cluster, where pod IPs cannot be reached -- or straight to the pod's IP (``--via=pod-ip``,
from inside the cluster), or to ``--controller-url``. Either way it carries the kubeconfig's
own credentials, and the controller authorizes ``get`` on ``/debug/why/...`` with the API
server, as for every ``/debug`` path.
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from controller.endpoint_client import EndpointError, credentials, get_json
from shared import exitcodes
from shared.cliflags import add_kubectl_flags, add_renamed, from_flags, http_url
from shared.tls import client_context

PORT_NAME = "metrics"  # the chart's name for the controller's HTTPS port


@dataclass(frozen=True)
class ControllerAccess:
    """How a command reaches the running controller's endpoints, as its flags said: a URL
    the user reaches, or the leader found through its Lease (``via`` port-forward or pod IP);
    always with the kubeconfig's credentials, and the controller's CA or no verification."""

    kubeconfig: str | None
    controller_url: str | None
    controller_ca_file: str | None
    insecure_skip_tls_verify: bool
    controller_namespace: str  # the Lease's
    lease_name: str
    via: str

    @classmethod
    def of(cls, a: argparse.Namespace) -> ControllerAccess:
        """From the flags of ``add_leader_flags`` and the endpoint flags."""
        return from_flags(cls, a)


@dataclass(frozen=True)
class Leader:
    namespace: str
    pod: str
    identity: str
    ip: str
    port: int


def add_parser(sub: Any, endpoint_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    w = sub.add_parser(
        "why",
        help="why an HPA has its replica count: the leader's last decisions, explained",
        description="Explain the last decisions of one HPA, step by step, from the running leader's "
        "memory: each metric's proposal, the step that limited it (tolerance, stabilization, policy, "
        "min/max), the conditions and what changed between decisions; in shadow mode, what the owner "
        "decided and whether promhpa agrees.",
    )
    w.add_argument("hpa", metavar="NAMESPACE/NAME")
    add_kind_flag(w)
    w.add_argument(
        "--last", type=_positive, default=3, help="how many distinct decisions to show (default %(default)s)"
    )
    w.add_argument(
        "-o", "--output", choices=("text", "json", "yaml"), type=lambda t: "text" if t == "table" else t,
        default="text", help="text (default), json or yaml",
    )  # fmt: skip
    w.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, then ~/.kube/config)")
    add_leader_flags(w)
    w.add_argument(
        "--controller-url",
        type=http_url,
        help="ask this controller instead of finding the leader (e.g. https://127.0.0.1:10258)",
    )
    endpoint_flags(w)
    add_kubectl_flags(w)
    w.set_defaults(func=cmd_why)


def add_leader_flags(p: argparse.ArgumentParser) -> None:
    """How the leader is found (its Lease) and reached; shared by ``why``, ``snapshot`` and ``compare``."""
    add_renamed(
        p, "--leader-elect-resource-namespace", "--controller-namespace", "promhpa",
        "namespace of the controller's leader-election Lease, as `run` names it (default %(default)s)",
    )  # fmt: skip
    add_renamed(
        p, "--leader-elect-resource-name", "--lease-name", "promhpa-controller",
        "name of the leader-election Lease, as `run` names it (the chart's: the controller's full name; "
        "default promhpa-controller)",
    )  # fmt: skip
    p.add_argument(
        "--via",
        choices=("port-forward", "pod-ip"),
        default="port-forward",
        help="reach the leader through the API server's port-forward (default; works from outside the "
        "cluster) or at its pod IP (from inside the cluster)",
    )


def add_kind_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kind",
        choices=("hpa", "phpa"),
        default="hpa",
        help="hpa: a built-in autoscaling/v2 HPA (the default); phpa: one of promhpa's own kind "
        "(autoscaling.promhpa.io/v2, docs/own-kind.md)",
    )


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def cmd_why(args: argparse.Namespace) -> int:
    namespace, _, name = args.hpa.partition("/")
    if not namespace or not name:
        print("error: give the HPA as NAMESPACE/NAME", file=sys.stderr)
        return 2
    path = f"/debug/why/{namespace}/{name}?last={args.last}&kind={args.kind}"
    try:
        doc, where = ask_controller(ControllerAccess.of(args), path)
    except EndpointError as e:
        if e.status == 404:
            print(f"error: {namespace}/{name} has not been reconciled by the leader (yet): is it selected "
                  "by --hpa-selector, and has one sync period passed?", file=sys.stderr)  # fmt: skip
        else:
            print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    if args.output == "json":
        print(json.dumps(doc, indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(doc, sort_keys=False), end="")
    else:
        print(render(doc, where))
    return 0


def ask_controller(access: ControllerAccess, path: str) -> tuple[Any, str]:
    """GET ``path`` of the running controller's endpoints with the kubeconfig's credentials:
    at ``--controller-url``, or at the leader found through its Lease; and who answered."""
    if access.controller_url:
        doc = get_json(
            access.controller_url.rstrip("/") + path,
            kubeconfig=access.kubeconfig,
            ca_file=access.controller_ca_file,
            insecure=access.insecure_skip_tls_verify,
        )
        return doc, access.controller_url
    leader = find_leader(access.kubeconfig, access.controller_namespace, access.lease_name)
    return ask_leader(leader, path, access), f"leader {leader.namespace}/{leader.pod}"


def find_leader(kubeconfig: str | None, namespace: str, lease: str) -> Leader:
    """The Lease holder's pod and the port of its endpoints."""
    held = _read(kubeconfig, "lease", namespace, lease, f"Lease {namespace}/{lease}")
    identity = str((held.get("spec") or {}).get("holderIdentity") or "")
    if not identity:
        raise EndpointError(
            f"Lease {namespace}/{lease} has no holder: is the controller running with --leader-elect?"
        )
    pod_name = identity.split("_", 1)[0]
    what = f"the leader's pod {namespace}/{pod_name} (from the Lease holder {identity!r})"
    pod = _read(kubeconfig, "pod", namespace, pod_name, what)
    ports = [
        p
        for c in (pod.get("spec") or {}).get("containers") or []
        for p in c.get("ports") or []
        if p.get("name") == PORT_NAME
    ]
    if not ports:
        raise EndpointError(
            f"pod {namespace}/{pod_name} names no container port {PORT_NAME!r} for its endpoints"
        )
    ip = str((pod.get("status") or {}).get("podIP") or "")
    return Leader(namespace, pod_name, identity, ip, int(ports[0]["containerPort"]))


def _read(kubeconfig: str | None, kind: str, namespace: str, name: str, what: str) -> dict[str, Any]:
    from shared.kube.errors import KubeconfigError, KubeError
    from shared.kube.portforward import read

    try:
        return read(kubeconfig, kind, namespace, name)
    except KubeconfigError as e:
        raise EndpointError(str(e), usage=True) from None
    except KubeError as e:
        hint = {404: "not found", 403: "forbidden to you", 0: f"no answer ({e.message})"}.get(
            e.status, e.message
        )
        raise EndpointError(f"cannot read {what}: {hint}", e.status) from None


def ask_leader(leader: Leader, path: str, access: ControllerAccess) -> Any:
    if access.via == "pod-ip":
        if not leader.ip:
            raise EndpointError(f"the leader's pod {leader.namespace}/{leader.pod} has no IP yet")
        return get_json(
            f"https://{leader.ip}:{leader.port}{path}",
            kubeconfig=access.kubeconfig,
            ca_file=access.controller_ca_file,
            insecure=access.insecure_skip_tls_verify,
        )
    return _through_port_forward(leader, path, access)


def _through_port_forward(leader: Leader, path: str, access: ControllerAccess) -> Any:
    """GET ``path`` over the API server's port-forward to the leader's pod, TLS to the
    controller inside it, with the kubeconfig's credentials."""
    from shared.kube.errors import KubeError
    from shared.kube.portforward import port_forward

    ctx = client_context(access.controller_ca_file)
    if access.insecure_skip_tls_verify:
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    headers = credentials(access.kubeconfig, ctx)
    where = f"{leader.namespace}/{leader.pod}"
    try:
        with port_forward(access.kubeconfig, leader.namespace, leader.pod, leader.port) as raw:
            raw.settimeout(15)
            conn = http.client.HTTPSConnection("controller", leader.port, context=ctx, timeout=15)
            conn.sock = ctx.wrap_socket(raw, server_hostname=f"{leader.pod}.{leader.namespace}")
            conn.request("GET", path, headers={**headers, "Connection": "close"})
            r = conn.getresponse()
            body = r.read()
    except KubeError as e:
        raise EndpointError(f"cannot port-forward to {where}: {e}", e.status) from None
    except ssl.SSLCertVerificationError as e:
        raise EndpointError(
            f"cannot verify the controller's certificate ({e.verify_message}): pass --controller-ca-file "
            "(the CA of its serving certificate) or --insecure-skip-tls-verify"
        ) from None
    except (OSError, http.client.HTTPException) as e:
        raise EndpointError(f"no answer through the port-forward to {where}: {e}") from None
    if r.status != 200:
        try:
            detail = json.loads(body or b"{}").get("message", r.reason)
        except ValueError:
            detail = r.reason
        raise EndpointError(f"{where}{path}: {r.status} {detail}", r.status)
    return json.loads(body)


def render(doc: dict[str, Any], where: str) -> str:
    items = doc.get("items") or []
    out = [f"{doc.get('namespace')}/{doc.get('name')}: the last {len(items)} distinct decision(s) of {where}"]
    for i, e in enumerate(items, 1):
        span = e["from"] if e["from"] == e["to"] else f"{e['from']} .. {e['to']}"
        out.append("")
        out.append(f"=== {i}. {span}, {e['reconciles']} reconcile(s), {e['mode']} mode")
        if e.get("changes"):
            out.append("changed: " + "; ".join(e["changes"]))
        step = e.get("limitingStep")
        current = e.get("currentReplicas")
        out.append(f"desired {e.get('desiredReplicas')} (current {current}), limiting step: {step}")
        owner = e.get("owner")
        if owner is not None:
            if owner.get("agrees") is None:
                out.append("owner: has not decided yet")
            else:
                differs = "promhpa DIFFERS: " + "; ".join(owner["differences"])
                verdict = "promhpa agrees" if owner["agrees"] else differs
                reasons = ", ".join(f"{t}={r}" for t, r in sorted(owner["conditions"].items()))
                out.append(f"owner: desired {owner.get('desiredReplicas')} ({reasons}); {verdict}")
        out.append("")
        out.append(e["explanation"])
    return "\n".join(out)
