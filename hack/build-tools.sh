#!/usr/bin/env bash
# Builds the offline lab control plane from pinned Go source modules into
# .lab/bin (git-ignored): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler (links to one binary, kube), kubectl, kwok, kwokctl;
# prometheus and promtool, for the tests of gpuops serve's alerts and
# dashboard; and helm, for the tests of the chart charts/gpuops.
#
# Each tools module under hack/tools/ is built only when its inputs changed
# (go.mod, go.sum, tools.go, the build arguments, the Go version) or a binary
# is missing; a stamp file per module in .lab/bin records what was built, so a
# second run with nothing changed returns at once. Concurrent runs (go test
# runs packages in parallel) are serialised with flock on .lab/.tools.lock.
# The end prints how long each step took.
#
# A cold build is mostly compiling Kubernetes. To keep it short: the
# Kubernetes commands are one `go build` (their packages are compiled once),
# and kube-apiserver, kube-controller-manager and kube-scheduler are one
# binary, .lab/bin/kube (hack/tools/kube/main.go), which they are links to:
# one link of the packages the three share instead of three (less CPU, disk
# and linker memory; docs/scale.md, "Building the control plane");
# the etcd and kwok modules depend on the same module versions as the kube
# module (hack/tools/align.sh), so after it they compile only their own
# packages; and a kubectl already on PATH whose minor version is within one of
# KUBE_VERSION's (kubectl's version skew policy) is linked into .lab/bin
# instead of built.
#
# Usage: build-tools.sh [lab]. With `lab`, only what the lab cluster needs
# (Prometheus, promtool and helm are for the tests; they are a few minutes of
# a cold build).
#
# Environment: LAB_BIN overrides the output folder.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${LAB_BIN:-$ROOT/.lab/bin}"
case "${1:-all}" in
lab | all) WHAT="${1:-all}" ;;
*) echo "build-tools: usage: build-tools.sh [lab]" >&2; exit 2 ;;
esac

# Kubernetes release the kube module pins (must match hack/tools/kube/go.mod).
KUBE_VERSION=v1.37.2

export GOWORK=off
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
command -v go >/dev/null || { echo "build-tools: go is not on PATH" >&2; exit 1; }

mkdir -p "$BIN" "$ROOT/.lab"
exec 9>"$ROOT/.lab/.tools.lock"
flock 9

# stamp MODULE_DIR BUILD_ARGS...: a digest of everything that decides the
# module's output.
stamp() {
	local dir=$1
	shift
	{
		go env GOVERSION GOOS GOARCH
		printf '%s\n' "$@"
		cat "$dir/go.mod" "$dir/go.sum" "$dir"/*.go
	} | sha256sum | cut -c1-32
}

# The timing summary: one line per step, printed when the script ends.
STEPS=()
BEGIN=${EPOCHREALTIME/[.,]/}
# since START: seconds (one decimal) from START (EPOCHREALTIME without its dot) to now.
since() {
	local us=$((${EPOCHREALTIME/[.,]/} - $1))
	printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}
step() { STEPS+=("$(printf '%-8s %7ss  %s' "$1" "$2" "$3")"); }
BUILT=false
summary() {
	if [[ "$BUILT" == false ]]; then
		echo "build-tools: up to date ($(since "$BEGIN") s)" >&2
		return 0
	fi
	local s
	for s in "${STEPS[@]}"; do echo "build-tools: $s" >&2; done
	printf 'build-tools: %-8s %7ss\n' total "$(since "$BEGIN")" >&2
}
trap summary EXIT

# build NAME "BIN1 BIN2..." -- go build args...
build() {
	local name=$1 outs=$2 dir="$ROOT/hack/tools/$1" want have="" missing="" b start=${EPOCHREALTIME/[.,]/}
	shift 3
	# The output folder is left out: checkouts that share .lab/bin (git
	# worktrees with a link to one .lab) then agree on what is up to date,
	# instead of each rebuilding after the other (and relinking kube, whose
	# main package is in the checkout).
	want="$(stamp "$dir" "${@//"$BIN"/BIN}")"
	[[ -f "$BIN/.stamp-$name" ]] && have="$(cat "$BIN/.stamp-$name")"
	for b in $outs; do [[ -x "$BIN/$b" ]] || missing+=" $b"; done
	if [[ "$want" == "$have" && -z "$missing" ]]; then
		step "$name" "$(since "$start")" "up to date ($outs)"
		return 0
	fi
	echo "build-tools: building $name ($outs)..." >&2
	rm -f "$BIN/.stamp-$name"
	BUILT=true
	(cd "$dir" && go build "$@")
	echo "$want" >"$BIN/.stamp-$name"
	step "$name" "$(since "$start")" "built ($outs)"
}

# path_kubectl: the first kubectl on PATH outside LAB_BIN, if its minor
# version is within one of KUBE_VERSION's; prints its path.
path_kubectl() {
	local dir dirs k minor want=${KUBE_VERSION#v1.} own
	want=${want%%.*}
	own="$(realpath -m "$BIN")"
	IFS=: read -ra dirs <<<"$PATH"
	for dir in "${dirs[@]}"; do
		k="$dir/kubectl"
		[[ -n "$dir" && -x "$k" && "$(realpath -m "$dir")" != "$own" && "$(realpath -m "$k")" != "$own"/* ]] || continue
		minor=$("$k" version --client -o json 2>/dev/null | sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -n1)
		[[ -n "$minor" ]] && ((minor >= want - 1 && minor <= want + 1)) || return 1
		echo "$k"
		return 0
	done
	return 1
}

kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	minor="${KUBE_VERSION#v1.}"
	minor="${minor%%.*}"
	kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

# Kubernetes first: etcd and kwok then find most of their packages compiled.
# The module's own package is the multi-call binary `kube`.
kube_bins="kube" kube_pkgs=(.)
if kubectl=$(path_kubectl); then
	start=${EPOCHREALTIME/[.,]/}
	ln -sfn "$kubectl" "$BIN/kubectl"
	step kubectl "$(since "$start")" "linked to $kubectl ($("$kubectl" version --client 2>/dev/null | head -n1))"
else
	[[ ! -L "$BIN/kubectl" ]] || rm -f "$BIN/kubectl" # linked by an earlier run, no longer fit
	kube_bins+=" kubectl"
	kube_pkgs+=(k8s.io/kubernetes/cmd/kubectl)
fi
build kube "$kube_bins" -- -ldflags "$kube_ldflags" -o "$BIN/" "${kube_pkgs[@]}"
# The command names kwokctl runs: links to kube, which picks the command by
# the name it is run as. A link is replaced only when it is not one already,
# so that a cluster starting meanwhile always finds its binary.
for b in kube-apiserver kube-controller-manager kube-scheduler; do
	[[ -L "$BIN/$b" && "$(readlink "$BIN/$b")" == kube ]] || ln -sfn kube "$BIN/$b"
done
build etcd "etcd" -- \
	-ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
build kwok "kwok kwokctl" -- \
	-ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}" \
	-o "$BIN/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl

# KWOK's default stages, from the module just built, for hack/cluster.sh: a
# cluster given a stage of its own (hack/kwokctl.yaml) gets none of them.
stages="$BIN/kwok-stages.yaml"
if [[ ! -s "$stages" || "$BIN/.stamp-kwok" -nt "$stages" ]]; then
	kwok_dir="$(cd "$ROOT/hack/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
	for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
		pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
		echo "---"
		cat "$kwok_dir/kustomize/stage/$f.yaml"
	done >"$stages.tmp"
	mv "$stages.tmp" "$stages"
fi
[[ "$WHAT" == lab ]] && exit 0
# Without service discovery (tag remove_all_sd: no cloud SDKs) and without
# the web UI's assets: the tests need only static targets and the HTTP API.
build prometheus "prometheus promtool" -- \
	-tags remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=3.16.0" -o "$BIN/" \
	github.com/prometheus/prometheus/cmd/prometheus \
	github.com/prometheus/prometheus/cmd/promtool
build helm "helm" -- \
	-ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v4.3.2" -o "$BIN/helm" helm.sh/helm/v4/cmd/helm
