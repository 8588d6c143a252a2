#!/usr/bin/env bash
# Runs every test of the root module (`go test -count=1 ./...`, extra flags
# passed on). Packages that use internal/testcluster each start a dedicated
# lab cluster and delete it when they end; their names carry a prefix unique
# to this run, so whatever a crashed test binary left behind is pruned here
# at the end. Exits with go test's status.
#
# The suite never reads the user's kubeconfig: it runs with $KUBECONFIG and
# ~/.kube/config (HOME is a folder of the run's own) set to copies of
# hack/testdata/stale-kubeconfig.yaml, whose current context names a cluster
# that is gone. A test that takes the machine's kubeconfig instead of the one
# it was given fails here as it would on a user's machine; and the run ends
# red if anything wrote to either copy or to the user's own ~/.kube/config.
#
# GPUOPS_TEST_KUBECONFIG=<kubeconfig> makes the integration tests use that
# running cluster instead (faster, but packages then share it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.lab/bin:$PATH"
export KUBECACHEDIR="${KUBECACHEDIR:-$ROOT/.lab/kube-cache}" # kubectl's cache, not ~/.kube

hack/build-tools.sh
# The test binaries, and the gpuops they build, without cgo, as the release
# archives are built (hack/krew): nothing of gpuops uses cgo, and a test
# binary then links in less than half the CPU, with no external link for the
# plugin package kustomize imports (docs/setup.md). The tools keep their
# own build.
export CGO_ENABLED=0

# Go's caches and settings stay where they were before HOME moves.
export GOCACHE GOMODCACHE GOPATH GOENV
GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" GOPATH="$(go env GOPATH)" GOENV="$(go env GOENV)"
USER_KUBECONFIG="$HOME/.kube/config"
user_kubeconfig_sum() { sha256sum "$USER_KUBECONFIG" 2>/dev/null || echo none; }
user_sum="$(user_kubeconfig_sum)"
TEST_HOME="$(mktemp -d)"
mkdir "$TEST_HOME/.kube"
cp hack/testdata/stale-kubeconfig.yaml "$TEST_HOME/.kube/config"
cp hack/testdata/stale-kubeconfig.yaml "$TEST_HOME/kubeconfig"
export HOME="$TEST_HOME" KUBECONFIG="$TEST_HOME/kubeconfig"

export GPUOPS_TEST_CLUSTER_PREFIX="gpuops-t$$"
trap 'hack/cluster.sh prune "$GPUOPS_TEST_CLUSTER_PREFIX-"; rm -rf "$TEST_HOME"' EXIT

status=0
go test -count=1 -timeout 30m "$@" ./... || status=$?

for f in "$TEST_HOME/.kube/config" "$TEST_HOME/kubeconfig"; do
	if ! cmp -s hack/testdata/stale-kubeconfig.yaml "$f"; then
		echo "test: FAIL: the run changed $f, the stand-in for the user's kubeconfig" >&2
		status=1
	fi
done
if [[ "$(user_kubeconfig_sum)" != "$user_sum" ]]; then
	echo "test: FAIL: the run changed $USER_KUBECONFIG" >&2
	status=1
fi
exit "$status"
