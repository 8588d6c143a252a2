#!/usr/bin/env bash
# Builds the offline lab control plane from pinned Go source modules into
# .lab/bin (git-ignored): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kwok, kwokctl; and prometheus and promtool, for the
# tests of gpuops serve's alerts.
#
# Each tools module under hack/tools/ is built only when its inputs changed
# (go.mod, go.sum, tools.go, this script, the Go version) or a binary is
# missing; a stamp file per module in .lab/bin records what was built, so a
# second run with nothing changed returns at once. Concurrent runs (go test
# runs packages in parallel) are serialised with flock on .lab/.tools.lock.
#
# Environment: LAB_BIN overrides the output folder.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${LAB_BIN:-$ROOT/.lab/bin}"
SELF="$ROOT/hack/build-tools.sh"

# Kubernetes release the kube module pins (must match hack/tools/kube/go.mod).
KUBE_VERSION=v1.37.2

export GOWORK=off
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
command -v go >/dev/null || { echo "build-tools: go is not on PATH" >&2; exit 1; }

mkdir -p "$BIN" "$ROOT/.lab"
exec 9>"$ROOT/.lab/.tools.lock"
flock 9

# stamp MODULE_DIR: a digest of everything that decides the module's output.
stamp() {
	{
		go env GOVERSION GOOS GOARCH
		cat "$SELF" "$1/go.mod" "$1/go.sum" "$1"/*.go
	} | sha256sum | cut -c1-32
}

# build NAME "BIN1 BIN2..." -- go build args...
build() {
	local name=$1 outs=$2 dir="$ROOT/hack/tools/$1" want have="" missing=""
	shift 3
	want="$(stamp "$dir")"
	[[ -f "$BIN/.stamp-$name" ]] && have="$(cat "$BIN/.stamp-$name")"
	for b in $outs; do [[ -x "$BIN/$b" ]] || missing+=" $b"; done
	if [[ "$want" == "$have" && -z "$missing" ]]; then
		echo "build-tools: $name up to date" >&2
		return 0
	fi
	echo "build-tools: building $name ($outs)..." >&2
	local start=$SECONDS
	rm -f "$BIN/.stamp-$name"
	(cd "$dir" && go build "$@")
	echo "$want" >"$BIN/.stamp-$name"
	echo "build-tools: $name built in $((SECONDS - start))s" >&2
}

kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	minor="${KUBE_VERSION#v1.}"
	minor="${minor%%.*}"
	kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

build etcd "etcd" -- \
	-ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
build kwok "kwok kwokctl" -- \
	-ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}" \
	-o "$BIN/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
build kube "kube-apiserver kube-controller-manager kube-scheduler kubectl" -- \
	-ldflags "$kube_ldflags" -o "$BIN/" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kubectl
# Without service discovery (tag remove_all_sd: no cloud SDKs) and without
# the web UI's assets: the tests need only static targets and the HTTP API.
build prometheus "prometheus promtool" -- \
	-tags remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=3.16.0" -o "$BIN/" \
	github.com/prometheus/prometheus/cmd/prometheus \
	github.com/prometheus/prometheus/cmd/promtool
