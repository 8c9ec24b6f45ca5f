"""The controller's HTTPS endpoints, guarded as kube-controller-manager's secure port is.

``/healthz``, ``/livez`` and ``/readyz`` are open (``--authorization-always-allow-paths``).
Everything else needs a caller the kube-apiserver vouches for -- a bearer token
(TokenReview) or a client certificate from the cluster's client CA -- and a
SubjectAccessReview allowing ``get`` on the path as a non-resource URL: ``/metrics`` for a
monitoring ServiceAccount (the chart grants its Prometheus exactly that), ``/debug/*`` --
each HPA's memory, its explained decisions (``why``) and the shadow comparison -- only to
whom a ClusterRole grants it. No
credentials: 401; credentials without that permission: 403; the answers are Kubernetes
``Status`` objects, as the API server's.

Readiness fails while an informer has not listed yet or has heard nothing from the API
server for ``stale_after`` seconds (``Informer.age``), and from the moment the process
starts stopping.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from controller.engine.decision import history_to_wire
from shared.kube.delegated import DelegatedAuth, User, certificate_user, non_resource
from shared.kube.informer import Informer
from shared.kube.secureport import (
    PROBE_PATHS,
    Gate,
    add_metrics_route,
    add_probe_routes,
    bearer_token,
    peer_ssl,
    status_response,
)

from .reconciler import Reconciler

log = structlog.get_logger("controller")
OPEN_PATHS = tuple(sorted(PROBE_PATHS))


@dataclass
class Readiness:
    informers: Iterable[Informer]
    stale_after: float = 180.0
    stopping: bool = False
    # waiting for the Lease: a standby lists nothing until it leads, and is ready to take
    # over -- not ready, it would count against the PodDisruptionBudget (the leader then
    # could never be evicted) and no rollout of two replicas would ever complete
    standby: bool = False
    _extra: list[Callable[[], str | None]] = field(default_factory=list)

    def reason(self) -> str | None:
        """Why the controller is not ready (None: it is)."""
        if self.stopping:
            return "shutting down"
        if self.standby:
            return None
        now = time.monotonic()
        for informer in self.informers:
            if not informer.synced.is_set():
                why = f": {informer.error}" if informer.error else ""
                return f"{informer.path} has not been listed yet{why}"
            age = informer.age(now)
            if age is not None and age > self.stale_after:
                why = f": {informer.error}" if informer.error else ""
                return f"{informer.path} has heard nothing from the Kubernetes API for {age:.0f}s{why}"
        return None


def gate(auth: DelegatedAuth, always_allow: Iterable[str]) -> Gate:
    """kube-controller-manager's secure port: a bearer token (TokenReview) or a client
    certificate of the cluster's client CA, then ``get`` on the path as a non-resource URL."""

    async def authenticate(request: web.Request) -> User | None:
        token = bearer_token(request)
        return await auth.token(token) if token is not None else certificate_user(peer_ssl(request))

    async def authorize(request: web.Request, user: User) -> tuple[bool, str]:
        return await auth.authorize(user, non_resource(request.path))

    def forbidden(request: web.Request, user: User) -> str:
        return f'forbidden: User "{user.name}" cannot get path "{request.path}"'

    return Gate(authenticate, authorize, forbidden, open_paths=frozenset(always_allow))


def endpoints_app(
    reconciler: Reconciler,
    metrics: CollectorRegistry,
    readiness: Readiness,
    *,
    dry_run: bool,
    sync_period: float,
    auth: DelegatedAuth | None,
    always_allow: Iterable[str] = OPEN_PATHS,
    own: Reconciler | None = None,
) -> web.Application:
    # auth None: --insecure-skip-auth, loopback only
    app = web.Application(middlewares=[gate(auth, always_allow).middleware()] if auth is not None else [])

    def of_kind(request: web.Request) -> Reconciler | web.Response:
        """``?kind=phpa``: promhpa's own HPA kind's reconciler; else the built-in HPAs'."""
        kind = request.query.get("kind", "hpa")
        if kind not in ("hpa", "phpa"):
            return status_response(400, "BadRequest", f"kind must be hpa or phpa, not {kind!r}")
        if kind == "hpa":
            return reconciler
        if own is None:
            return status_response(
                404,
                "NotFound",
                "this controller does not reconcile promhpa's own HPA kind (its CRD is not installed, "
                "or --own-kind=off)",
            )
        return own

    async def memory(request: web.Request) -> web.Response:
        """What this controller remembers of one HPA (recommendations, scale events): the
        `history` of its next snapshot, so `snapshot --controller-url` reproduces a live
        decision exactly. 404 when it has not reconciled the HPA (yet)."""
        key = (request.match_info["namespace"], request.match_info["name"])
        chosen = of_kind(request)
        if isinstance(chosen, web.Response):
            return chosen
        history = chosen.records.history(key)
        if history is None:
            return web.json_response(
                {"message": f"{key[0]}/{key[1]} has not been reconciled here"}, status=404
            )
        return web.json_response(history_to_wire(history))

    async def shadow(request: web.Request) -> web.Response:
        """Dry run: each HPA's would-be status beside its owner's, and where they differ
        (`promhpa-controller compare` reads this). 404 when not in dry run."""
        if not dry_run:
            return web.json_response({"message": "this controller is not running with --dry-run"}, status=404)
        ns, name = request.match_info.get("namespace"), request.match_info.get("name")
        items = [
            c.to_wire()
            for key, c in sorted(reconciler.shadow.comparisons.items())
            if ns is None or key == (ns, name)
        ]
        if ns is not None and not items:
            return web.json_response({"message": f"{ns}/{name} has not been reconciled here"}, status=404)
        return web.json_response(
            {
                "syncPeriodSeconds": sync_period,
                "differencesTotal": reconciler.shadow.differences_total,
                "ownerDecisionsCompared": dict(reconciler.shadow.paired),
                "items": items,
            }
        )

    async def why(request: web.Request) -> web.Response:
        """The HPA's last distinct decisions, each explained step by step, with what changed
        (``controller.live.why``); ``?last=N`` keeps the newest N. 404 when not reconciled."""
        ns, name = request.match_info["namespace"], request.match_info["name"]
        last = request.query.get("last", "")
        if last and not (last.isdigit() and int(last) > 0):
            return status_response(400, "BadRequest", f"last must be a positive integer, not {last!r}")
        chosen = of_kind(request)
        if isinstance(chosen, web.Response):
            return chosen
        body = chosen.why.to_wire((ns, name), int(last) if last else None)
        if body is None:
            return status_response(404, "NotFound", f"{ns}/{name} has not been reconciled by this controller")
        period = chosen.sync_period_of((ns, name)) or sync_period
        return web.json_response({**body, "dryRun": chosen.dry_run, "syncPeriodSeconds": period})

    async def writers(_: web.Request) -> web.Response:
        """HPAs another controller writes, which promhpa leaves alone (``second_writer``)."""
        items = [
            {
                "namespace": ns,
                "name": name,
                "passiveSince": w.passive_since.isoformat() if w.passive_since else None,
                "lastEvidence": w.last_evidence.isoformat() if w.last_evidence else None,
                "evidence": w.evidence,
                "staleSince": w.stale_since.isoformat() if w.stale_since else None,
            }
            for (ns, name), w in reconciler.records.passive()
        ]
        return web.json_response({"items": items})

    add_probe_routes(app, alive=lambda: None, ready=readiness.reason)
    add_metrics_route(app, metrics)
    app.router.add_get("/debug/shadow", shadow)
    app.router.add_get("/debug/shadow/{namespace}/{name}", shadow)
    app.router.add_get("/debug/history/{namespace}/{name}", memory)
    app.router.add_get("/debug/writers", writers)
    app.router.add_get("/debug/why/{namespace}/{name}", why)
    return app
