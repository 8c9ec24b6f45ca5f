"""The live controller's lifecycle, top to bottom: start, serve, drain, stop.

1. start: the Kubernetes clients -- ``--kube-api-qps`` and ``--kube-api-burst`` applied as
   kube-controller-manager applies them, to each client it builds: the informers', and the
   HPA controller's HPA, scale and metrics clients (``PerClient``); the Lease's unlimited,
   so a renewal never queues behind reconciles -- the reconciler, and the HTTPS endpoints
   (``endpoints``: delegated authentication and authorization);
2. with leader election, wait for the Lease (``leader``), then renew it in the background;
3. the HPA and pod informers, listed before anything is decided (deciding on an empty
   cache would be deciding blind), then the workers (``workers``) -- the built-in HPAs'
   (active, or shadowed in a dry run) and, where its CRD is installed, those of promhpa's
   own kind (``autoscaling.promhpa.io/v2``), which the built-in controller never touches,
   so they are acted on in every mode;
4. on SIGTERM or SIGINT (handled from the first line: a container's process 1 gets no
   SIGTERM without a handler): not ready at once, no new reconcile, the ones under way
   finish within ``--shutdown-grace-period``, the Lease is released so a standby takes over
   at once (client-go's ReleaseOnCancel), informers and endpoints close, exit 0.

A standby starts with empty memory, so its first reconcile records the current replica
count before anything else, as upstream does after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import structlog
from aiohttp import web

from controller.engine.gates import gates_to_wire
from controller.engine.knobs import own_kind_settings
from controller.engine.model import Settings
from shared.gcpolicy import freeze_startup_heap
from shared.kube.client import Kube, load
from shared.kube.delegated import DelegatedAuth, client_ca
from shared.kube.discovery import RESTMapper
from shared.kube.errors import KubeError, NotFound
from shared.kube.informer import Informer
from shared.kube.resources import OWN_HPA
from shared.lifecycle import stop_signals, until_stopped
from shared.tls import server_context, serving_files

from . import admission
from .caches import hpa_informer, pod_informer
from .endpoints import OPEN_PATHS, Readiness, endpoints_app
from .leader import LeaderElection, LeaderElector
from .monitor import ControllerMetrics
from .own_kind import own_kind_workers
from .reconciler import Reconciler
from .scale_reads import ScaleReads
from .shadow import Shadow
from .why import WhyLog
from .workers import Workers
from .writer import COMPONENT, EventRecorder

DRY_RUN_COMPONENT = "promhpa"

log = structlog.get_logger("controller")


@dataclass
class Options:
    kubeconfig: str | None
    # the settings, given the API server's version (gitVersion): the release decided as
    # comes from it unless --emulated-version says otherwise
    settings: Callable[[str | None], Settings]
    sync_period: float
    workers: int
    hpa_selector: str
    dry_run: bool
    leader: LeaderElection | None  # None: no election (--leader-elect=false)
    bind_address: str
    port: int
    metrics_timeout: float = 15.0
    kube_api_qps: float = 20.0
    kube_api_burst: int = 30
    shutdown_grace: float = 20.0
    informer_stale_after: float = 180.0
    informer_watch_idle_timeout: float = 90.0
    insecure_skip_auth: bool = False
    always_allow_paths: tuple[str, ...] = OPEN_PATHS
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    cert_dir: str = "controller.local.config/certificates"
    cert_dns_names: list[str] = field(default_factory=list)
    second_writer_quiet: float = 300.0  # 0: no second-writer guard
    why_history: int = 5  # distinct decisions kept per HPA for `why` (0: none)
    scale_reads: str = "watch"  # or "get" (``scale_reads``)
    admission_webhook_port: int = 0  # promhpa's own kind's admission webhook (0: not served)
    own_kind: bool = True  # reconcile promhpa's own HPA kind where its CRD is installed


async def run(opts: Options) -> int:
    stop = stop_signals()
    # 1. start
    api = await asyncio.to_thread(load, opts.kubeconfig)
    lease_kube = Kube(api)
    settings = opts.settings(await _server_version(lease_kube))
    log.info(
        "deciding_as",
        kubernetes=str(settings.release),
        feature_gates=gates_to_wire(settings.feature_gates, settings.release),
    )
    elector = _elector(opts, lease_kube)

    informer_kube = Kube(api).limited(opts.kube_api_qps, opts.kube_api_burst)
    kube = Kube(api).limited(opts.kube_api_qps, opts.kube_api_burst, per_client=True)
    if elector is not None:
        kube = kube.guarded(elector.guard)  # every scale, status and event write
    metrics = ControllerMetrics()
    idle = opts.informer_watch_idle_timeout
    hpas = hpa_informer(informer_kube, None, opts.hpa_selector, idle)
    pods = pod_informer(informer_kube, None, idle)
    scales = ScaleReads(
        kube,
        informer_kube,
        watch=opts.scale_reads == "watch",
        watch_idle_timeout=opts.informer_watch_idle_timeout,
        on_read=metrics.count_scale_read,
    )
    mapper = RESTMapper(kube)
    reconciler = Reconciler(
        kube,
        mapper,
        hpas,
        pods,
        settings,
        EventRecorder(kube, component=DRY_RUN_COMPONENT if opts.dry_run else COMPONENT),
        metrics,
        dry_run=opts.dry_run,
        metrics_timeout=opts.metrics_timeout,
        shadow=Shadow(opts.sync_period),
        why=WhyLog(opts.why_history),
        second_writer_quiet=(
            timedelta(seconds=opts.second_writer_quiet)
            if opts.second_writer_quiet > 0 and not opts.dry_run
            else None
        ),
        scales=scales,
    )
    workers = Workers(
        reconciler,
        sync_period=opts.sync_period,
        count=opts.workers,
        dry_run=opts.dry_run,
        generation_gate=settings.feature_gates.hpa_generation,
        enqueues_immediately=settings.release.enqueues_immediately,
        elector=elector,
    )
    hpas.on_change = workers.on_hpa
    own = await _own_kind(opts, lease_kube, informer_kube, workers)
    informers = (hpas, pods)
    everything = informers if own is None else (*informers, own.reconciler.hpas)
    metrics.watch_informers(
        {"hpas": hpas, "pods": pods, **({"own_hpas": own.reconciler.hpas} if own is not None else {})}
    )
    readiness = Readiness(informers, stale_after=opts.informer_stale_after)
    endpoints = await _serve_endpoints(
        opts, lease_kube, reconciler, metrics, readiness, own.reconciler if own is not None else None
    )
    webhook = None
    if opts.admission_webhook_port:
        cert, key = serving_files(opts.tls_cert_file, opts.tls_key_file, opts.cert_dir, opts.cert_dns_names)
        webhook = await admission.serve(
            opts.bind_address,
            opts.admission_webhook_port,
            server_context(cert, key),
            own_kind_settings(settings),
        )
    log.info(
        "controller starting",
        dry_run=opts.dry_run,
        hpa_selector=opts.hpa_selector or None,
        own_kind=own is not None,
        sync_period=opts.sync_period,
        workers=opts.workers,
        leader_elect=opts.leader is not None,
        identity=elector.identity if elector is not None else None,
        kube_api_qps=opts.kube_api_qps,
        kube_api_burst=opts.kube_api_burst,
        endpoints=f"https://{opts.bind_address}:{opts.port}",
    )
    renewing: asyncio.Task[None] | None = None
    own_start: asyncio.Task[None] | None = None
    try:
        # 2. leadership
        if elector is not None:
            readiness.standby = True
            if not await elector.acquire(stop):
                return 0
            readiness.standby = False
            renewing = asyncio.create_task(elector.keep_renewing())
        # 3. caches, then workers; promhpa's own kind on its own, so that a kind it may not
        # list (a grant missing) holds back only its objects, never the built-in HPAs
        for informer in everything:
            informer.start()
        if own is not None:
            own_start = asyncio.create_task(_start_own(own, readiness))
        if not await until_stopped(_synced(*informers), stop):
            return 0
        log.info("caches synced", gc_frozen_objects=freeze_startup_heap())
        workers.start(hpas.items())
        await stop.wait()
        # 4. drain
        readiness.stopping = True
        log.info("stopping: finishing the reconciles under way", grace_seconds=opts.shutdown_grace)
        draining = [workers.drain(opts.shutdown_grace)]
        if own is not None:
            draining.append(own.drain(opts.shutdown_grace))
        cut = sum(await asyncio.gather(*draining))
        if cut:
            log.warning("reconciles still running at the end of the grace period were cancelled", count=cut)
    finally:
        # 5. stop
        if own_start is not None:
            own_start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await own_start
        if renewing is not None:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
        if elector is not None:
            with contextlib.suppress(KubeError):  # no writes follow: a standby may take over now
                await elector.release()
        for informer in everything:
            await informer.aclose()
        await scales.aclose()
        await endpoints.cleanup()
        if webhook is not None:
            await webhook.cleanup()
        for client in (kube, informer_kube, lease_kube):
            await client.aclose()
        log.info("stopped")
    return 0


async def _own_kind(opts: Options, lease_kube: Kube, informer_kube: Kube, builtin: Workers) -> Workers | None:
    """The workers of promhpa's own HPA kind (``own_kind``), or None when the kind is off or
    its CRD is not installed."""
    if not opts.own_kind:
        return None
    try:
        await lease_kube.get(OWN_HPA.group_version.path)
    except NotFound:
        log.warning(
            "own_kind_not_installed",
            group_version=OWN_HPA.api_version,
            hint="install the chart's CRD (charts/promhpa/crds) to reconcile promhpa's own HPA kind",
        )
        return None
    return own_kind_workers(
        builtin,
        informer_kube,
        hpa_selector=opts.hpa_selector,
        watch_idle_timeout=opts.informer_watch_idle_timeout,
        why_history=opts.why_history,
        second_writer_quiet=timedelta(seconds=opts.second_writer_quiet)
        if opts.second_writer_quiet > 0
        else None,
    )


async def _start_own(workers: Workers, readiness: Readiness) -> None:
    """Once the own kind's informer has listed: its workers, and its cache in readiness."""
    informer = workers.reconciler.hpas
    await _synced(informer)
    readiness.informers = (*readiness.informers, informer)
    log.info("own kind synced", objects=len(informer.items()))
    workers.start(informer.items())


async def _server_version(kube: Kube) -> str | None:
    """The API server's gitVersion, which the release decided as follows by default."""
    try:
        version = await kube.get("/version")
    except KubeError as e:
        log.warning("server_version_unknown", error=str(e), deciding_as="the newest supported release")
        return None
    return str(version.get("gitVersion") or "") or None


def _elector(opts: Options, kube: Kube) -> LeaderElector | None:
    if opts.leader is None:
        return None
    # client-go's identity: the host name and a fresh UUID. Not the PID: in a container every
    # replica is process 1 (and two replicas on one host would share a name). The pod's name
    # (POD_NAME, from the chart) comes first where set: on the host network the host name is
    # the node's, and `why` finds the leader's pod by this prefix
    host = os.environ.get("POD_NAME") or socket.gethostname()
    return LeaderElector(kube, opts.leader, f"{host}_{uuid.uuid4()}")


async def _synced(*informers: Informer) -> None:
    """Until every informer has listed once, saying every 10 s which one is waited for."""
    for informer in informers:
        while not await informer.wait_synced(10):
            log.error("waiting for the first list", path=informer.path, error=informer.error or None)


async def _serve_endpoints(
    opts: Options,
    kube: Kube,
    reconciler: Reconciler,
    metrics: ControllerMetrics,
    readiness: Readiness,
    own: Reconciler | None,
) -> web.AppRunner:
    """The HTTPS endpoints; client certificates are verified against the cluster's client CA."""
    ctx = server_context(
        *serving_files(opts.tls_cert_file, opts.tls_key_file, opts.cert_dir, opts.cert_dns_names)
    )
    auth = None
    if not opts.insecure_skip_auth:
        auth = DelegatedAuth(kube)
        ctx.load_verify_locations(cadata=await client_ca(kube))
        ctx.verify_mode = ssl.CERT_OPTIONAL
    app = endpoints_app(
        reconciler,
        metrics.registry,
        readiness,
        dry_run=opts.dry_run,
        sync_period=opts.sync_period,
        auth=auth,
        always_allow=opts.always_allow_paths,
        own=own,
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, opts.bind_address, opts.port, ssl_context=ctx).start()
    except OSError:
        await runner.cleanup()
        raise
    return runner
