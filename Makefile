# promhpa -- one command to set up and run each job on a fresh machine.
#   make test   virtualenv + install + lint + the cluster tools (built once) + every test
#   make demo   virtualenv + install + the cluster tools + the whole story on a local control plane
#   make unit   virtualenv + install + the pure tests (no cluster, no Prometheus, no build): seconds
PYTHON ?= python3
# Which Prometheus the tests and the local cluster run: 3 (built from the Go module proxy) or
# 2 (Debian's 2.x); CI runs the adapter and end-to-end tests against both
PROMETHEUS ?= 3
export PROMHPA_PROMETHEUS := $(PROMETHEUS)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: bench-reaction venv constraints image image-lock release lint unit test test-prometheus2 e2e differential demo examples conformance cluster-tools cluster cluster-down bench-adapter bench-discovery bench-controller bench-scale clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# Pin every runtime dependency as tested (constraints.txt, which the image installs from).
constraints: venv
	$(BIN)/python hack/constraints.py

# The image both processes run from, from the commit checked out: an OCI archive under build/
# with its SBOM, digest and size (release/image.py; no container engine, no registry).
# IMAGE_ARCH=arm64 on an arm64 host, after `make image-lock IMAGE_ARCH=arm64` there.
# IMAGE_EXTRAS= (empty) leaves out the cloud extras (botocore, google-auth and azure-identity,
# for Amazon's, Google's and Azure's managed Prometheus).
IMAGE_ARCH ?= amd64
IMAGE_EXTRAS ?= aws,google,azure
image: venv
	$(BIN)/python -m release image --arch $(IMAGE_ARCH) --extras "$(IMAGE_EXTRAS)"

# Pin the image's Debian packages anew (release/debian.lock), e.g. after a security update.
image-lock: venv
	$(BIN)/python -m release lock --arch $(IMAGE_ARCH)

# dist/: the wheel, sdist and the wheels they need, the chart, the image and its SBOM, SHA256SUMS.
release: venv
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z" >&2; exit 2; }
	@hack/build-tools.sh helm >/dev/null
	$(BIN)/python -m release dist $(VERSION) \
		--helm "$$($(BIN)/python -c 'from localcluster.tools import Binaries, cache_bin; print(Binaries(cache_bin()).helm)')"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The inner loop: pure tests only (the engine, parsing, PromQL, paths); builds nothing.
unit: venv
	$(BIN)/pytest -q -m "not cluster and not tools and not slow"

# The cluster tools are built before pytest so a cold build (25-45 min) shows its progress.
test: lint cluster-tools
	$(BIN)/pytest --durations=25

# The release as users install it, on a real node (kubelet, containerd, runc, kube-proxy,
# CoreDNS on this machine; needs root): docs/install.md's commands, then the chart's
# Deployments, APIServices, HPAs, security context, upgrade, evictions and leader hand-over.
# `make test` runs these too. E2E_KEEP=DIR leaves that cluster running with the release
# installed, until `python -m localcluster down --dir DIR`.
e2e: venv cluster-tools
	$(BIN)/pytest tests/e2e

# What differs between Prometheus releases, again against Prometheus 2.x (CI runs this too):
# the adapter's tests (every query, series and label call, errors, timeouts, POST, UTF-8
# names), the replay's range queries, the chart's scraping, and of the controller's live tests
# those where Prometheus is in the story (the HPAs' metrics end to end, Thanos' sidecar,
# Prometheus stopped). Left to `make test` alone, as they run the same whichever Prometheus
# answers: the adapter's authorization and namespace boundary (boundary, fuzzed paths), its
# own bounds (hostile rules, team limits, overload, informer health, shutdown), the
# APIServices, the migration and cut-over from prometheus-adapter, forwarding (upstreams,
# KEDA), Mimir's tenants; and the controller's leader election, watch recovery, pausing and
# sync-period tests. Of the files named, a test that reaches no Prometheus (tests/conftest.py)
# is deselected.
PROMETHEUS_INDEPENDENT := test_namespace_boundary test_fuzz_paths test_hostile_rules_live test_team_limits_live \
  test_overload test_informer_health test_shutdown test_aggregation test_migration test_cutover test_upstreams \
  test_keda test_team_tenants_live
test-prometheus2: venv cluster-tools
	PROMHPA_PROMETHEUS=2 $(BIN)/pytest --durations=15 tests/adapter tests/controller/replay tests/charts/test_observability.py \
	  tests/controller/live/test_controller.py tests/controller/live/test_thanos.py tests/controller/live/test_fallback_live.py \
	  $(foreach f,$(PROMETHEUS_INDEPENDENT),--ignore=tests/adapter/$(f).py) \
	  $(foreach t,test_only_the_leader_acts_and_a_standby_takes_over test_watches_resume_after_the_apiserver_restarts \
	    test_a_paused_leader_writes_nothing_after_resuming test_reconciled_once_per_sync_period_and_at_once_after_a_spec_change,\
	    --deselect tests/controller/live/test_controller.py::$(t))

# A long differential run against upstream's controller package at each release (make test
# runs 5,000 at the newest and 2,000 at each older one, with a fixed seed);
# e.g. make differential SNAPSHOTS=100000 SEED=$$RANDOM
SNAPSHOTS ?= 50000
SEED ?= 1
differential: venv cluster-tools
	PROMHPA_DIFF_SNAPSHOTS=$(SNAPSHOTS) PROMHPA_DIFF_SEED=$(SEED) $(BIN)/pytest -q -s tests/differential

# Upstream's answers for the cases in tests/conformance (and ../shared/conformance's, if there)
conformance: venv
	$(BIN)/python tests/conformance/run.py tests/conformance/hpa $(wildcard ../shared/conformance/hpa)

# The whole story: control plane, Prometheus, a demo app, adapter and controller; the HPA
# scales up with the load and back down; everything is stopped at the end.
# REAL_NODE=1 (as root): the same story with real pods on the real node, the chart installed.
demo: venv cluster-tools
	$(BIN)/python -m localcluster.demo $(if $(REAL_NODE),--real-node)

# Offline: decide the example snapshots and explain each decision.
examples: venv
	$(BIN)/python -m controller decide --explain docs/examples/*.yaml

# Builds (once, cached in ~/.cache/promhpa) the real control-plane binaries the cluster tests use.
cluster-tools:
	@hack/build-tools.sh >/dev/null

# A real control plane on 127.0.0.1 (state, logs and kubeconfig in .cluster/); returns when ready.
# THANOS=1 adds two Prometheus replicas with Thanos sidecars and a Querier (dedup on `replica`).
cluster: venv cluster-tools
	$(BIN)/python -m localcluster up --dir .cluster $(if $(THANOS),--thanos)

cluster-down: venv
	$(BIN)/python -m localcluster down --dir .cluster

# promhpa's adapter beside prometheus-adapter v0.12.0 (built once, cached), same Prometheus,
# rules, objects and front-proxy authentication, taking turns; the serving stack's own floor
# beside raw Prometheus (what promhpa / raw can reach here); probes under load; then discovery figures.
# Tables only, loopback only, bounded.
bench-adapter: venv cluster-tools
	@hack/build-tools.sh bench >/dev/null
	$(BIN)/python -m benchmarks.side_by_side
	$(BIN)/python -m benchmarks.serving_floor
	$(BIN)/python -m benchmarks.probes
	$(BIN)/python -m benchmarks.discovery
	$(BIN)/python -m benchmarks.bench_adapter
	$(BIN)/python -m benchmarks.forwarding

# Discovery of 100,000 series alone, both adapters taking turns (part of bench-adapter).
bench-discovery: venv cluster-tools
	@hack/build-tools.sh bench >/dev/null
	$(BIN)/python -m benchmarks.discovery

# N HPAs (100, 1,000, 2,000) with 10 kwok pods each on the local control plane, reconciled by
# promhpa and then by kube-controller-manager's HPA controller alone; prints both and ratios.
# Then one Kubernetes GET through each of Kube's transports (threads vs the event loop).
bench-controller: venv cluster-tools
	$(BIN)/python -m benchmarks.bench_controller
	$(BIN)/python -m benchmarks.kube_transport

# The scale run behind docs/benchmarks.md: the controller at 1,000 / 5,000 / 10,000 / 20,000 HPAs
# of 10 pods beside kube-controller-manager's HPA controller, at default and raised client limits;
# the adapter's discovery of 100,000 and 1,000,000 series and pods/* over 10,000 pods beside
# prometheus-adapter. `make bench-scale ARGS=--update-docs` rewrites the page.
bench-scale: venv cluster-tools
	@hack/build-tools.sh bench >/dev/null
	$(BIN)/python -m benchmarks.scale $(ARGS)

# How long from a step in a metric's load to the scale write: promhpa's own kind at sync
# periods 15 s, 5 s and 2 s beside kube-controller-manager (15 s) and KEDA's ScaledObject, on
# one local control plane (about 20 minutes for the default 50 steps).
# `make bench-reaction ARGS=--update-docs` rewrites the table in docs/benchmarks.md.
bench-reaction: venv cluster-tools
	$(BIN)/python -m benchmarks.reaction $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info
