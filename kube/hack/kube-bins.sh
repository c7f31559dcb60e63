#!/usr/bin/env bash
# Builds the Kubernetes control-plane binaries that fairsched-kube's end-to-end suite and
# benchmark run against, from the Go module proxy, into a cache keyed by version outside the
# checkout (default ~/.cache/fairsched/kube-bins, so that every clone on the machine shares it):
#
#   $KUBE_BINS_DIR/<k8s version>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}
#   $KUBE_BINS_DIR/<k8s version>/bin/kwok        (sigs.k8s.io/kwok at KWOK_VERSION)
#   $KUBE_BINS_DIR/<k8s version>/bin/etcd        (the repository's internal/etcdtest/etcddev)
#
# A binary already in the cache is not rebuilt, so a warm machine pays nothing. k8s.io/kubernetes
# is not meant to be used as a module: its go.mod requires every k8s.io/* staging module at
# v0.0.0 and replaces it with a directory of its own tree. A throwaway module here requires
# k8s.io/kubernetes and replaces each of those staging modules with its published release
# (v1.X.Y -> v0.X.Y), which is the same source.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KUBE_BINS_DIR="${KUBE_BINS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fairsched/kube-bins}"
DIR="$KUBE_BINS_DIR/$K8S_VERSION"
BIN="$DIR/bin"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
GO="${GO:-go}"
# one package at a time by default: the API server's link peaks near 3 GB and the machine
# has two cores that the rest of the work shares
BUILD_P="${KUBE_BINS_P:-1}"

mkdir -p "$BIN" "$DIR/mod"
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export CGO_ENABLED=0

log() { echo "kube-bins: $*" >&2; }

need() {
	local name
	for name in "$@"; do
		[ -x "$BIN/$name" ] || return 0
	done
	return 1
}

if need kube-apiserver kube-controller-manager kube-scheduler kubectl; then
	mod="$DIR/mod"
	if [ ! -f "$mod/go.mod" ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" "$mod/go.mod"; then
		log "resolving k8s.io/kubernetes@$K8S_VERSION"
		gomod="$(cd "$mod" && GOFLAGS= "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
		if [ -z "$gomod" ] || [ ! -f "$gomod" ]; then
			log "cannot download k8s.io/kubernetes@$K8S_VERSION's go.mod"
			exit 1
		fi
		{
			echo "module fairsched.local/kubebins"
			echo
			echo "go $("$GO" env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/').0"
			echo
			echo "require k8s.io/kubernetes $K8S_VERSION"
			echo
			# every "k8s.io/foo => ./staging/src/k8s.io/foo" becomes "k8s.io/foo => k8s.io/foo v0.X.Y"
			sed -n -E 's#^[[:space:]]*(replace[[:space:]]+)?(k8s\.io/[A-Za-z0-9._/-]+)[[:space:]]+=>[[:space:]]+\./staging/src/.*#replace \2 => \2 '"$STAGING_VERSION"'#p' "$gomod"
		} >"$mod/go.mod"
		log "$(grep -c '^replace' "$mod/go.mod") staging modules replaced by their $STAGING_VERSION releases"
	fi
	ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
	for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		if [ -x "$BIN/$cmd" ]; then
			continue
		fi
		log "building $cmd $K8S_VERSION (the first build takes many minutes)"
		start=$SECONDS
		(cd "$mod" && "$GO" get "k8s.io/kubernetes/cmd/$cmd@$K8S_VERSION" >/dev/null 2>&1 || true)
		(cd "$mod" && "$GO" build -p "$BUILD_P" -trimpath -ldflags "$ldflags" -o "$BIN/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
		mv "$BIN/$cmd.tmp" "$BIN/$cmd"
		log "built $cmd in $((SECONDS - start)) s"
	done
fi

if [ ! -x "$BIN/kwok" ]; then
	log "building kwok $KWOK_VERSION"
	start=$SECONDS
	GOBIN="$BIN" GOFLAGS= "$GO" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
	log "built kwok in $((SECONDS - start)) s"
fi

if [ ! -x "$BIN/etcd" ] || [ "$ROOT/internal/etcdtest/etcdtest.go" -nt "$BIN/etcd" ]; then
	log "building etcd (internal/etcdtest/etcddev)"
	(cd "$ROOT" && GOFLAGS= "$GO" build -o "$BIN/etcd" ./internal/etcdtest/etcddev)
fi

for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kwok etcd; do
	[ -x "$BIN/$b" ] || { log "missing $BIN/$b"; exit 1; }
done
"$BIN/kube-apiserver" --version >&2 || true
echo "$BIN"
