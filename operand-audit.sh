#!/usr/bin/env bash
# operand-audit.sh — for every node of the cluster, is each GPU Operator operand
# that the node asks for (deploy label exactly "true") Running there?
#
# Prints "<node> MISSING <operand>" per missing operand, or "<node> OK", nodes
# in natural name order (lab-node-2 before lab-node-10). Exit 0 when nothing is
# missing, 1 when something is, 2 when the cluster could not be read.
#
# A pod counts when a DaemonSet of the operand controls it (its controller
# ownerReference, not merely its app label), its phase is Running and it is not
# being deleted. Two API reads in all, one node list and one pod list; the
# lists go through files, never through arguments, so any cluster size works.
#
# Needs bash, kubectl and jq. Honours KUBECONFIG; the namespace is
# gpu-operator unless GPUOPS_NAMESPACE says otherwise. Same semantics and
# output as `gpuops audit`.
set -euo pipefail

NAMESPACE="${GPUOPS_NAMESPACE:-gpu-operator}"

# The roster, in audit order: operand, deploy label key, DaemonSet.
# It must agree with the gpuops operand catalog (a test compares them).
ROSTER='
driver nvidia.com/gpu.deploy.driver nvidia-driver-daemonset
container-toolkit nvidia.com/gpu.deploy.container-toolkit nvidia-container-toolkit-daemonset
device-plugin nvidia.com/gpu.deploy.device-plugin nvidia-device-plugin-daemonset
gpu-feature-discovery nvidia.com/gpu.deploy.gpu-feature-discovery gpu-feature-discovery
dcgm-exporter nvidia.com/gpu.deploy.dcgm-exporter nvidia-dcgm-exporter
'

die() {
	echo "operand-audit.sh: error: $*" >&2
	exit 2
}

for tool in kubectl jq; do
	command -v "$tool" >/dev/null || die "$tool not found in PATH"
done

tmp="$(mktemp -d)" || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT

# Raw lists: one request each, no client-side paging or re-encoding.
kubectl get --raw /api/v1/nodes >"$tmp/nodes.json" 2>"$tmp/err" ||
	die "cannot list nodes: $(tr '\n' ' ' <"$tmp/err")"
kubectl get --raw "/api/v1/namespaces/$NAMESPACE/pods" >"$tmp/pods.json" 2>"$tmp/err" ||
	die "cannot list pods in namespace $NAMESPACE: $(tr '\n' ' ' <"$tmp/err")"

# Present pods, reduced to {node: {daemonset: true}} so the big list is parsed once.
jq -c '
	reduce (.items[]?
		| select(.status.phase == "Running" and .metadata.deletionTimestamp == null and .spec.nodeName != null)
		| {node: .spec.nodeName, ds: ([.metadata.ownerReferences[]?
			| select(.controller == true and .kind == "DaemonSet" and .apiVersion == "apps/v1")
			| .name] | last)}
		| select(.ds != null)
	) as $p ({}; .[$p.node][$p.ds] = true)
' "$tmp/pods.json" >"$tmp/present.json" || die "cannot read the pod list"

# Natural order: digit runs compare by value (without leading zeros, by length
# then digits), sort before other runs, and ties fall back to the plain name
# order (sort_by is stable). This is the order of gpuops, run for run.
jq -r --arg roster "$ROSTER" --slurpfile present "$tmp/present.json" '
	def natural: [scan("[0-9]+|[^0-9]+")
		| if test("^[0-9]") then (sub("^0+"; "") | [0, length, .]) else [1, .] end];
	($roster | split("\n") | map(select(length > 0) | split(" ") | {name: .[0], key: .[1], ds: .[2]})) as $ops
	| $present[0] as $present
	| (.items // []) | sort_by(.metadata.name) | sort_by(.metadata.name | natural) | .[]
	| .metadata.name as $node
	| (.metadata.labels // {}) as $labels
	| [$ops[] | select($labels[.key] == "true" and $present[$node][.ds] != true) | .name] as $missing
	| if $missing == [] then "\($node) OK" else $missing[] | "\($node) MISSING \(.)" end
' "$tmp/nodes.json" >"$tmp/audit" || die "cannot read the node list"

cat "$tmp/audit"
if grep -q ' MISSING ' "$tmp/audit"; then
	exit 1
fi
