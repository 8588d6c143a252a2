#!/usr/bin/env bash
# Runs every test of the root module (`go test -count=1 ./...`, extra flags
# passed on). Packages that use internal/testcluster each start a dedicated
# lab cluster and delete it when they end; their names carry a prefix unique
# to this run, so whatever a crashed test binary left behind is pruned here
# at the end. Exits with go test's status.
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
# binary then links in 2.6 CPU-seconds instead of 6.2, with no external link
# for the plugin package kustomize imports (bench/RESULTS.md, "The test suite
# without cgo"). The tools keep their own build.
export CGO_ENABLED=0

export GPUOPS_TEST_CLUSTER_PREFIX="gpuops-t$$"
trap 'hack/cluster.sh prune "$GPUOPS_TEST_CLUSTER_PREFIX-"' EXIT

go test -count=1 -timeout 30m "$@" ./...
