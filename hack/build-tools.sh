#!/usr/bin/env bash
# Build (once, cached by version outside the repository) every real component the local
# control plane needs: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# etcd, kwok, helm, Prometheus 3, Thanos -- from the Go module proxy -- plus Debian's Prometheus.
#
# Why wrapper modules: k8s.io/kubernetes and etcd's server module replace their sibling
# modules with relative paths, so `go install pkg@version` refuses them. A throwaway module
# that requires the real module and maps each replaced sibling to its published version
# builds the same code. The list of siblings is read from upstream's go.mod, not hard-coded.
#
# Usage: hack/build-tools.sh            builds what is missing, prints the bin directory last
# Env:   PROMHPA_CACHE (default ~/.cache/promhpa)
set -euo pipefail

# One place for the versions (hack/versions.env); the environment overrides each.
_env=()
for v in K8S_VERSION DIFFERENTIAL_VERSIONS K8S_NEWER_GO GO_UNSERVED_REPLACEMENTS CONTAINERD_VERSION RUNC_VERSION CNI_PLUGINS_VERSION COREDNS_VERSION CRI_TOOLS_VERSION K8S_OLDER_VERSION ETCD_VERSION KWOK_VERSION HELM_VERSION PROMETHEUS_VERSION THANOS_VERSION THANOS_GO PROMETHEUS_ADAPTER_VERSION KEDA_VERSION; do
  if [[ -n "${!v:-}" ]]; then _env+=("$v=${!v}"); fi
done
# shellcheck source=versions.env
source "$(dirname "$0")/versions.env"
for kv in "${_env[@]}"; do export "${kv?}"; done
unset _env kv v

CACHE=${PROMHPA_CACHE:-$HOME/.cache/promhpa}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
# Only the Go module proxy is reachable: never fall back to direct VCS fetches.
export GOPROXY=${GOPROXY:-https://proxy.golang.org}
[[ "$GOPROXY" == *direct* ]] && export GOPROXY=https://proxy.golang.org
export GONOSUMDB= GOFLAGS

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
step() {  # step NAME CHECK_FILE FUNCTION: run FUNCTION unless CHECK_FILE exists, timing it
  local name=$1 check=$2 fn=$3 t0
  if [[ -x "$check" || -f "$check" ]]; then log "$name: cached ($check)"; return; fi
  log "$name: building ..."
  t0=$(date +%s)
  "$fn" "${@:4}"
  log "$name: done in $(( $(date +%s) - t0 ))s"
}

# A wrapper go.mod: require MODULE@VERSION, and replace each sibling that upstream's go.mod
# points at a local path with SIBLING_VERSION of the published module.
make_wrapper() {  # dir module version sibling_version
  local dir=$1 mod=$2 ver=$3 sibver=$4 gomod
  rm -rf "$dir"; mkdir -p "$dir"
  gomod=$(go mod download -json "$mod@$ver" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  {
    echo "module promhpa.local/wrapper"
    echo
    grep -E '^go [0-9]' "$gomod" | head -1
    echo
    echo "require $mod $ver"
    echo
    # "X => ./relative/path" or "X v0.0.0 => ../path" lines, inside or outside a replace block
    python3 - "$gomod" "$sibver" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# Only siblings upstream actually requires: etcd also "replaces" modules it forbids.
required = set(re.findall(r'^\s*(?:require\s+)?(\S+)\s+v\S+(?:\s*//.*)?$', text, re.M))
seen = set()
for m in re.finditer(r'^\s*(?:replace\s+)?(\S+)(?:\s+v\S+)?\s+=>\s+(\.\.?/\S*)\s*$', text, re.M):
    mod = m.group(1)
    if mod in required and mod not in seen:
        seen.add(mod)
        print(f"replace {mod} => {mod} {sys.argv[2]}")
PY
    # a requirement the proxy refuses, built with the nearest served version (versions.env)
    local r m req served
    for r in ${GO_UNSERVED_REPLACEMENTS:-}; do
      m=${r%%@*}; req=${r#*@}; req=${req%%=>*}; served=${r#*=>}
      if grep -qE "^[[:space:]]*(require[[:space:]]+)?$m $req([[:space:]]|$)" "$gomod"; then
        log "replacing $m $req (refused by the proxy) with $served"
        echo "replace $m $req => $m $served"
      fi
    done
  } > "$dir/go.mod"
  echo 'package wrapper' > "$dir/doc.go"
}

# The Go toolchain MODULE@VERSION builds with: the machine's, or K8S_NEWER_GO when the
# module's go.mod needs a newer Go (Kubernetes 1.38 needs 1.27). A release and its harness
# then build with the same toolchain and share one Go build cache.
toolchain_for() {  # module version
  local json need have
  json=$(GOTOOLCHAIN=local go mod download -json "$1@$2" 2>/dev/null || true)
  need=$(python3 -c 'import json,re,sys; m=re.search(r"^go (\S+)", open(json.loads(sys.argv[1])["GoMod"]).read(), re.M); print(m.group(1) if m else "1")' "$json")
  have=$(GOTOOLCHAIN=local go env GOVERSION); have=${have#go}
  if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -1) == "$have" ]]; then echo local; else echo "$K8S_NEWER_GO"; fi
}

build_k8s() {
  local w="$CACHE/work/k8s-$K8S_VERSION" out="$CACHE/bin/k8s-$K8S_VERSION"
  local -x GOTOOLCHAIN; GOTOOLCHAIN=$(toolchain_for k8s.io/kubernetes "$K8S_VERSION")
  make_wrapper "$w" k8s.io/kubernetes "$K8S_VERSION" "v0${K8S_VERSION#v1}"
  local minor; minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  mkdir -p "$out.tmp"
  (cd "$w" && go build -trimpath -ldflags "-s -w $ld" -o "$out.tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_etcd() {
  local w="$CACHE/work/etcd-$ETCD_VERSION" out="$CACHE/bin/etcd-$ETCD_VERSION"
  make_wrapper "$w" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION"
  mkdir -p "$out.tmp"
  (cd "$w" && go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_kwok() {
  local out="$CACHE/bin/kwok-$KWOK_VERSION"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # The stage files (node/pod lifecycle) ship inside the module.
  local src; src=$(go list -m -json "sigs.k8s.io/kwok@$KWOK_VERSION" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir",""))' || true)
  [[ -n "$src" ]] || src=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$src/kustomize/stage" "$out.tmp/stage"; chmod -R u+w "$out.tmp/stage"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_helm() {
  local out="$CACHE/bin/helm-$HELM_VERSION"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Debian's PACKAGEs downloaded into DIR (apt's lists refreshed once if they are stale) and each
# unpacked into DIR/root: nothing installed. Every Debian part of the cache comes this way.
unpack_debs() { # DIR PACKAGE...
  local dir=$1 deb; shift
  (cd "$dir" && { apt-get download "$@" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download "$@" >/dev/null; }; } \
     && for deb in ./*.deb; do dpkg-deb -x "$deb" root; done)
}

get_prometheus() {
  local out="$CACHE/bin/prometheus-debian" tmp; tmp=$(mktemp -d)
  unpack_debs "$tmp" prometheus
  mkdir -p "$out.tmp"
  cp "$tmp/root/usr/bin/prometheus" "$tmp/root/usr/bin/promtool" "$out.tmp/"
  rm -rf "$tmp" "$out"; mv "$out.tmp" "$out"
}

# A command from one of Debian's packages, unpacked into the cache (not installed): runc and
# umoci, which the image test runs the built image with (tests/release/test_image.py).
get_debian_command() { # PACKAGE COMMAND
  local out="$CACHE/bin/$1-debian" tmp; tmp=$(mktemp -d)
  unpack_debs "$tmp" "$1"
  mkdir -p "$out.tmp"
  cp -L "$(ls "$tmp/root/usr/sbin/$2" "$tmp/root/usr/bin/$2" 2>/dev/null | head -1)" "$out.tmp/$2"
  rm -rf "$tmp" "$out"; mv "$out.tmp" "$out"
}

# iptables and nft for the real node (kube-proxy's and the kubelet's rules, the CNI plugins',
# node_host's snapshot and isolation), with the libraries they load, unpacked from Debian's
# packages like runc and umoci: fresh machines of this kind no longer carry either. bin/ holds
# one wrapper per command that points the loader and xtables' extensions at the unpacked tree;
# the node's processes and node_host find them there before the host's own.
NETFILTER_PACKAGES="iptables libip4tc2 libip6tc2 libxtables12 libmnl0 libnetfilter-conntrack3 libnfnetlink0 libnftnl11 nftables libnftables1 libjansson4 libedit2"
get_netfilter() {
  local out="$CACHE/bin/netfilter-debian" tmp lib cmd target; tmp=$(mktemp -d)
  # shellcheck disable=SC2086
  unpack_debs "$tmp" $NETFILTER_PACKAGES
  rm -rf "$out.tmp"; mkdir -p "$out.tmp/bin"; mv "$tmp/root" "$out.tmp/root"; rm -rf "$tmp"
  lib=$(dirname "$(find "$out.tmp/root" -name 'libxtables.so.12' | head -1)")
  lib=${lib#"$out.tmp/"}
  for cmd in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore nft; do
    target=xtables-nft-multi; [[ $cmd == nft ]] && target=nft  # the multi-call binary reads its name
    printf '#!/usr/bin/env bash\nd=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)\nLD_LIBRARY_PATH="$d/%s" XTABLES_LIBDIR="$d/%s/xtables" exec -a %s "$d/root/usr/sbin/%s" "$@"\n' \
      "$lib" "$lib" "$cmd" "$target" >"$out.tmp/bin/$cmd"
  done
  chmod +x "$out.tmp/bin/"*
  "$out.tmp/bin/iptables" --version >/dev/null && "$out.tmp/bin/nft" --version >/dev/null
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Prometheus 3 from the Go module proxy. One service-discovery dependency is not served
# here: remove_all_sd leaves every SD out but Kubernetes' (enable_kubernetes_sd), which the
# real node's in-cluster Prometheus scrapes pods and the kubelet with. The release
# (3.XY.Z for module v0.3XY.Z) goes in through ldflags so --version reports it.
build_prometheus3() {
  local out="$CACHE/bin/prometheus-$PROMETHEUS_VERSION-k8s-sd" v=${PROMETHEUS_VERSION#v0.}
  local release="${v:0:1}.$((10#${v:1:2})).${v#*.}" pv=github.com/prometheus/common/version
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath -tags remove_all_sd,enable_kubernetes_sd \
      -ldflags "-s -w -X $pv.Version=$release -X $pv.Branch=release -X $pv.Revision=$PROMETHEUS_VERSION" \
      "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Thanos (sidecar + Querier: the distributed backend the adapter is tested behind). Its go.mod
# replaces several modules with forks, which `go install` refuses; a wrapper module that
# carries upstream's replace block unchanged builds the same code. It needs a newer Go than
# the one installed: GOTOOLCHAIN fetches that toolchain from the proxy. Its releases build
# with the tags in its .promu.yml (netgo, slicelabels): without slicelabels its label code
# reads Prometheus' labels with the wrong layout and the sidecar's gRPC answers panic.
build_thanos() {
  local w="$CACHE/work/thanos-$THANOS_VERSION" out="$CACHE/bin/thanos-$THANOS_VERSION" gomod
  rm -rf "$w"; mkdir -p "$w"
  gomod=$(GOTOOLCHAIN=$THANOS_GO go mod download -json "github.com/thanos-io/thanos@$THANOS_VERSION" \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  python3 - "$gomod" "$THANOS_VERSION" > "$w/go.mod" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
go = re.search(r"^go (\S+)", text, re.M).group(1)
block = re.search(r"^replace \((.*?)^\)", text, re.M | re.S)
print(f"module promhpa.local/thanos\n\ngo {go}\n\nrequire github.com/thanos-io/thanos {sys.argv[2]}\n")
if block:
    print("replace (" + block.group(1) + ")")
PY
  printf 'package wrapper\n\nimport _ "github.com/thanos-io/thanos/pkg/component"\n' > "$w/doc.go"
  local pv=github.com/prometheus/common/version
  mkdir -p "$out.tmp"
  (cd "$w" && GOTOOLCHAIN=$THANOS_GO go mod tidy >/dev/null 2>&1 || true
   cd "$w" && GOTOOLCHAIN=$THANOS_GO go build -trimpath -tags netgo,slicelabels \
      -ldflags "-s -w -X $pv.Version=${THANOS_VERSION#v} -X $pv.Branch=release -X $pv.Revision=$THANOS_VERSION" \
      -o "$out.tmp/thanos" github.com/thanos-io/thanos/cmd/thanos)
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# prometheus-adapter, the incumbent the benchmarks run beside us (never part of the product).
# The proxy refuses `go install` of it (its version list is withheld); a wrapper module that
# requires the release builds it from the same zip.
build_prometheus_adapter() {
  local w="$CACHE/work/prometheus-adapter-$PROMETHEUS_ADAPTER_VERSION" out="$CACHE/bin/prometheus-adapter-$PROMETHEUS_ADAPTER_VERSION"
  rm -rf "$w"; mkdir -p "$w"
  printf 'module promhpa.local/prometheus-adapter\n\ngo 1.22.1\n\nrequire sigs.k8s.io/prometheus-adapter %s\n' \
    "$PROMETHEUS_ADAPTER_VERSION" > "$w/go.mod"
  printf 'package wrapper\n\nimport _ "sigs.k8s.io/prometheus-adapter/pkg/config"\n' > "$w/doc.go"
  mkdir -p "$out.tmp"
  (cd "$w" && go mod tidy >/dev/null 2>&1 || true
   cd "$w" && go build -trimpath -ldflags "-s -w" -o "$out.tmp/adapter" sigs.k8s.io/prometheus-adapter/cmd/adapter)
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Ory Hydra, the OAuth2 server of the OAuth2 tests (test tooling). Its module zip leaves out
# the API client it replaces with a directory of its own, so a wrapper module requires the
# release with the published client and Hydra's one other replace (its fork of pop); the
# sqlite tag (cgo) gives it the in-memory store the tests run it with (DSN=memory).
build_hydra() {
  local w="$CACHE/work/hydra-$HYDRA_VERSION" out="$CACHE/bin/hydra-$HYDRA_VERSION-sqlite" gomod pop
  rm -rf "$w"; mkdir -p "$w"
  gomod=$(go mod download -json "github.com/ory/hydra/v2@$HYDRA_VERSION" \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  pop=$(grep -m1 '^replace github.com/gobuffalo/pop/v6 =>' "$gomod" | sed 's/^replace //')
  printf 'module promhpa.local/hydra\n\ngo %s\n\nrequire github.com/ory/hydra/v2 %s\n\nreplace %s\n' \
    "$(grep -m1 '^go ' "$gomod" | cut -d' ' -f2)" "$HYDRA_VERSION" "$pop" > "$w/go.mod"
  printf 'package wrapper\n\nimport (\n\t_ "github.com/ory/hydra/v2/cmd"\n\t_ "github.com/ory/hydra/v2/cmd/server"\n\t_ "github.com/ory/x/profilex"\n)\n' > "$w/doc.go"
  mkdir -p "$out.tmp"
  (cd "$w" && go mod tidy >/dev/null 2>&1 || true
   cd "$w" && CGO_ENABLED=1 go build -trimpath -tags sqlite -ldflags "-s -w" -o "$out.tmp/hydra" github.com/ory/hydra/v2)
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Grafana Mimir, built in a copy of its own module (its replace directives, e.g. its fork of
# Prometheus, apply only there); no cgo.
build_mimir() {
  local w="$CACHE/work/mimir-$MIMIR_VERSION" out="$CACHE/bin/mimir-$MIMIR_VERSION" dir
  dir=$(go mod download -json "github.com/grafana/mimir@$MIMIR_VERSION" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  rm -rf "$w"; mkdir -p "$(dirname "$w")"; cp -r "$dir" "$w"; chmod -R u+w "$w"
  mkdir -p "$out.tmp"
  (cd "$w" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out.tmp/mimir" ./cmd/mimir)
  rm -rf "$out" "$w"; mv "$out.tmp" "$out"
}

# The benchmarks' load generator (benchmarks/loadgen, test tooling): a Go client, as the
# aggregator is, so the client's own CPU does not bound the rates it measures. Cached by a
# hash of its source, so an edit builds a new one.
# A small Go program of ours (go.mod and main.go in SRC, relative to the checkout), cached
# under NAME-<hash of its source>.
source_dir() { # NAME SRC
  local here; here=$(cd "$(dirname "$0")/.." && pwd)
  echo "$CACHE/bin/$1-$(cat "$here/$2/go.mod" "$here/$2/main.go" | sha256sum | cut -c1-12)"
}
build_source() { # NAME SRC
  local here out; here=$(cd "$(dirname "$0")/.." && pwd); out=$(source_dir "$1" "$2")
  mkdir -p "$out.tmp"
  (cd "$here/$2" && go build -trimpath -o "$out.tmp/$1" .)
  rm -rf "$out"; mv "$out.tmp" "$out"
}
loadgen_dir() { source_dir loadgen benchmarks/loadgen; }
build_loadgen() { build_source loadgen benchmarks/loadgen; }

# The differential test's harness (test tooling): upstream's own pkg/controller/podautoscaler,
# copied unchanged from the module cache into a wrapper module next to our driver file
# (tests/differential/harness), one per Kubernetes release promhpa decides as
# (DIFFERENTIAL_VERSIONS). The one internal that differs between releases -- where the
# controller keeps HPA selectors -- is chosen by what the release's package contains.
# Cached by release and a hash of the harness sources, so an edit builds new ones.
differential_hash() {
  local h; h=$(cd "$(dirname "$0")/../tests/differential/harness" && pwd)
  cat "$h/main.go.in" "$h/selectors_bimultimap.go.in" "$h/selectors_tracker.go.in" "$h/zz_promhpa_harness.go" \
    | sha256sum | cut -c1-12
}
build_differential() {
  local v=$DIFF_VERSION
  local w="$CACHE/work/differential-$v" out="$CACHE/bin/hpa-differential-$v-$(differential_hash)"
  local here; here=$(cd "$(dirname "$0")/.." && pwd)
  local -x GOTOOLCHAIN; GOTOOLCHAIN=$(toolchain_for k8s.io/kubernetes "$v")
  make_wrapper "$w" k8s.io/kubernetes "$v" "v0${v#v1}"
  local src; src=$(go mod download -json "k8s.io/kubernetes@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$w/podautoscaler" "$w/cmd/hpa-differential"
  for f in "$src"/pkg/controller/podautoscaler/*.go; do
    case "$f" in *_test.go) ;; *) cp "$f" "$w/podautoscaler/" ;; esac
  done
  chmod -R u+w "$w/podautoscaler"
  cp "$here/tests/differential/harness/zz_promhpa_harness.go" "$w/podautoscaler/"
  if [[ -f "$src/pkg/controller/podautoscaler/hpa_selector_store.go" ]]; then
    cp "$here/tests/differential/harness/selectors_tracker.go.in" "$w/podautoscaler/zz_promhpa_selectors.go"
  else
    cp "$here/tests/differential/harness/selectors_bimultimap.go.in" "$w/podautoscaler/zz_promhpa_selectors.go"
  fi
  cp "$here/tests/differential/harness/main.go.in" "$w/cmd/hpa-differential/main.go"
  mkdir -p "$out.tmp"
  (cd "$w" && go build -trimpath -o "$out.tmp/hpa-differential" ./cmd/hpa-differential)
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Go's regexp behind a JSON driver (tests/rules/goregexp, test tooling): the regex
# differential test's reference. Standard library only; cached by a hash of its source.
goregexp_dir() { source_dir goregexp tests/rules/goregexp; }
build_goregexp() { build_source goregexp tests/rules/goregexp; }

# KEDA's operator and metrics server, and its CRDs from the same module zip. Its go.mod
# replaces one dependency with another version (not a local path), which `go install`
# refuses: a wrapper module carries the same replace lines.
build_keda() {
  local w="$CACHE/work/keda-$KEDA_VERSION" out="$CACHE/bin/keda-$KEDA_VERSION" json dir gomod
  rm -rf "$w"; mkdir -p "$w"
  json=$(go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION")
  dir=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  gomod=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  {
    echo "module promhpa.local/keda"; echo
    grep -E '^go [0-9]' "$gomod" | head -1; echo
    echo "require github.com/kedacore/keda/v2 $KEDA_VERSION"; echo
    grep -E '^replace ' "$gomod" || true
  } > "$w/go.mod"
  echo 'package wrapper' > "$w/doc.go"
  mkdir -p "$out.tmp/crds"
  (cd "$w" && go build -trimpath -ldflags "-s -w" -o "$out.tmp/" \
      github.com/kedacore/keda/v2/cmd/adapter github.com/kedacore/keda/v2/cmd/operator)
  cp "$dir"/config/crd/bases/*.yaml "$out.tmp/crds/"
  chmod -R u+w "$out.tmp"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# The real node (localcluster --real-node): the kubelet and kube-proxy of K8S_VERSION, and
# containerd 2.x, runc, the CNI plugins, CoreDNS and crictl, all from the Go module proxy
# (Debian's containerd 1.6 is too old for these kubelets). runc is the one cgo build: it
# links Debian's libseccomp statically (unpacked from libseccomp-dev, not installed), since
# without seccomp it refuses a pod's RuntimeDefault profile. Each part builds in parallel.
node_dir() {
  local pause; pause=$(sha256sum "$(dirname "$0")/../localcluster/pause/pause.c" | cut -c1-8)
  echo "$CACHE/bin/node-$K8S_VERSION-$CONTAINERD_VERSION-$RUNC_VERSION-$CNI_PLUGINS_VERSION-$COREDNS_VERSION-$pause"
}
build_node() {
  local out; out=$(node_dir)
  local w="$CACHE/work/node-$K8S_VERSION" minor ld="" pids=() p
  rm -rf "$out.tmp"; mkdir -p "$out.tmp/cni"
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  make_wrapper "$w" k8s.io/kubernetes "$K8S_VERSION" "v0${K8S_VERSION#v1}"
  (cd "$w" && go build -trimpath -ldflags "-s -w $ld" -o "$out.tmp/" \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy) & pids+=($!)
  local cv=github.com/containerd/containerd/v2/version
  GOBIN="$out.tmp" go install -trimpath -tags "no_btrfs no_devmapper no_zfs" \
      -ldflags "-s -w -X $cv.Version=$CONTAINERD_VERSION -X $cv.Revision=$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" & pids+=($!)
  GOBIN="$out.tmp/cni" go install -trimpath -ldflags "-s -w" \
      "github.com/containernetworking/plugins/plugins/main/bridge@$CNI_PLUGINS_VERSION" \
      "github.com/containernetworking/plugins/plugins/main/loopback@$CNI_PLUGINS_VERSION" \
      "github.com/containernetworking/plugins/plugins/ipam/host-local@$CNI_PLUGINS_VERSION" \
      "github.com/containernetworking/plugins/plugins/meta/portmap@$CNI_PLUGINS_VERSION" & pids+=($!)
  GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION" & pids+=($!)
  GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRI_TOOLS_VERSION" & pids+=($!)
  build_runc "$out.tmp" & pids+=($!)
  # the pod sandbox's process (localcluster/pause/pause.c), static: its image holds nothing else
  gcc -Os -static -s -o "$out.tmp/pause" "$(dirname "$0")/../localcluster/pause/pause.c"
  local failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  [[ $failed == 0 ]] || { log "a part of the real node failed to build (output above)"; return 1; }
  rm -rf "$out"; mv "$out.tmp" "$out"
}
# libseccomp-dev's library directory goes in CGO_LDFLAGS as well as pkg-config's flags: Go's
# build cache keeps the cgo package's pkg-config link flags from the first build (the -L of
# that build's temporary tree), so a later build that reused the package (a new K8S_VERSION's
# node) linked against a deleted directory and failed with "cannot find -lseccomp".
build_runc() { # OUT
  local tmp; tmp=$(mktemp -d)
  unpack_debs "$tmp" libseccomp-dev
  # its pkg-config file names /usr: point it at the unpacked tree
  local pc lib; pc=$(find "$tmp/root" -name libseccomp.pc | head -1); lib=$(dirname "$(dirname "$pc")")
  sed -i "s|^prefix=.*|prefix=$tmp/root/usr|; s|^libdir=.*|libdir=$lib|" "$pc"
  CGO_ENABLED=1 PKG_CONFIG_PATH=$(dirname "$pc") CGO_LDFLAGS="-L$lib" GOBIN="$1" go install -trimpath -tags "seccomp urfave_cli_no_docs netgo osusergo" \
      -ldflags "-s -w -X main.version=${RUNC_VERSION#v} -extldflags -static" \
      "github.com/opencontainers/runc@$RUNC_VERSION"
  rm -rf "$tmp"
}

mkdir -p "$CACHE/bin" "$CACHE/work"
only=${1:-all}
[[ $only == all || $only == prometheus ]] && step "prometheus (Debian)" "$CACHE/bin/prometheus-debian/prometheus" get_prometheus
[[ $only == all || $only == prometheus3 ]] && step "prometheus $PROMETHEUS_VERSION" "$CACHE/bin/prometheus-$PROMETHEUS_VERSION-k8s-sd/prometheus" build_prometheus3
[[ $only == all || $only == etcd ]] && step "etcd $ETCD_VERSION" "$CACHE/bin/etcd-$ETCD_VERSION/etcd" build_etcd
[[ $only == all || $only == kwok ]] && step "kwok $KWOK_VERSION" "$CACHE/bin/kwok-$KWOK_VERSION/kwok" build_kwok
[[ $only == all || $only == helm ]] && step "helm $HELM_VERSION" "$CACHE/bin/helm-$HELM_VERSION/helm" build_helm
[[ $only == all || $only == k8s ]] && step "kubernetes $K8S_VERSION (4 binaries)" "$CACHE/bin/k8s-$K8S_VERSION/kube-apiserver" build_k8s
# the older release the shadow test also runs beside (a cluster of its own)
if [[ $only == all || $only == k8s-older ]] && [[ $K8S_OLDER_VERSION != "$K8S_VERSION" ]]; then
  K8S_VERSION=$K8S_OLDER_VERSION step "kubernetes $K8S_OLDER_VERSION (4 binaries)" "$CACHE/bin/k8s-$K8S_OLDER_VERSION/kube-apiserver" build_k8s
fi
[[ $only == all || $only == thanos ]] && step "thanos $THANOS_VERSION" "$CACHE/bin/thanos-$THANOS_VERSION/thanos" build_thanos
# prometheus-adapter: the upstream the multiplexing and migration tests forward to, and the
# incumbent the benchmarks run beside us
[[ $only == all || $only == bench || $only == prometheus-adapter ]] && step "prometheus-adapter $PROMETHEUS_ADAPTER_VERSION" "$CACHE/bin/prometheus-adapter-$PROMETHEUS_ADAPTER_VERSION/adapter" build_prometheus_adapter
[[ $only == all || $only == hydra ]] && step "hydra $HYDRA_VERSION (the OAuth2 tests' server)" "$CACHE/bin/hydra-$HYDRA_VERSION-sqlite/hydra" build_hydra
[[ $only == all || $only == mimir ]] && step "mimir $MIMIR_VERSION (the tenants tests' backend)" "$CACHE/bin/mimir-$MIMIR_VERSION/mimir" build_mimir
[[ $only == all || $only == keda ]] && step "keda $KEDA_VERSION (operator, metrics server)" "$CACHE/bin/keda-$KEDA_VERSION/operator" build_keda
# only for the benchmarks (make bench-adapter / bench-controller), not the tests
[[ $only == bench || $only == loadgen ]] && step "loadgen (benchmarks/loadgen)" "$(loadgen_dir)/loadgen" build_loadgen
[[ $only == all || $only == image ]] && step "runc (Debian)" "$CACHE/bin/runc-debian/runc" get_debian_command runc runc
[[ $only == all || $only == image ]] && step "umoci (Debian)" "$CACHE/bin/umoci-debian/umoci" get_debian_command umoci umoci
# (not for another release's control plane: PROMHPA_NODE=0, which localcluster sets for it)
[[ $only == node || $only == netfilter || ($only == all && ${PROMHPA_NODE:-1} == 1) ]] && step "iptables and nft (Debian)" "$CACHE/bin/netfilter-debian/bin/nft" get_netfilter
[[ $only == node || ($only == all && ${PROMHPA_NODE:-1} == 1) ]] && step "real node ($K8S_VERSION kubelet and kube-proxy, containerd $CONTAINERD_VERSION, runc $RUNC_VERSION, CNI, CoreDNS, crictl)" "$(node_dir)/kubelet" build_node
[[ $only == all || $only == goregexp ]] && step "goregexp (Go's regexp, for the regex differential test)" "$(goregexp_dir)/goregexp" build_goregexp
if [[ $only == all || $only == differential ]]; then
  for DIFF_VERSION in $DIFFERENTIAL_VERSIONS; do
    step "hpa-differential $DIFF_VERSION (upstream's controller package)" "$CACHE/bin/hpa-differential-$DIFF_VERSION-$(differential_hash)/hpa-differential" build_differential
  done
fi
echo "$CACHE/bin"
