#!/usr/bin/env bash
# order-check.sh NODE — is the device plugin running on NODE without the
# container toolkit it needs?
#
# Prints "device-plugin-without-toolkit" and exits 1 when a device-plugin pod is
# present on NODE and no container-toolkit pod is; prints "ok" and exits 0
# otherwise. A missing argument, a node that does not exist or a cluster that
# cannot be read is exit 2 with a message on stderr.
#
# A pod counts when a DaemonSet of the operand controls it (its controller
# ownerReference, not merely its app label), its phase is Running and it is not
# being deleted. It looks only at NODE: one node read, one list of the pods
# bound to NODE.
#
# Needs bash, kubectl and jq. Honours KUBECONFIG; the namespace is
# gpu-operator unless GPUOPS_NAMESPACE says otherwise. Same semantics and
# output as `gpuops order-check NODE`.
set -euo pipefail

NAMESPACE="${GPUOPS_NAMESPACE:-gpu-operator}"

# The DaemonSets of the two operands the rule relates. They must agree with the
# gpuops operand catalog (a test compares them).
DEVICE_PLUGIN_DS=nvidia-device-plugin-daemonset
TOOLKIT_DS=nvidia-container-toolkit-daemonset
FINDING=device-plugin-without-toolkit

die() {
	echo "order-check.sh: error: $*" >&2
	exit 2
}

[[ $# -eq 1 && -n "$1" ]] || die "usage: order-check.sh NODE"
NODE="$1"
# A node name is a DNS subdomain; anything else cannot name a node (and must
# not reach a URL or a field selector).
[[ "$NODE" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "node \"$NODE\" not found"

for tool in kubectl jq; do
	command -v "$tool" >/dev/null || die "$tool not found in PATH"
done

tmp="$(mktemp -d)" || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT

if ! kubectl get --raw "/api/v1/nodes/$NODE" >/dev/null 2>"$tmp/err"; then
	grep -q NotFound "$tmp/err" && die "node \"$NODE\" not found"
	die "cannot read node $NODE: $(tr '\n' ' ' <"$tmp/err")"
fi
kubectl get --raw "/api/v1/namespaces/$NAMESPACE/pods?fieldSelector=spec.nodeName%3D$NODE" \
	>"$tmp/pods.json" 2>"$tmp/err" ||
	die "cannot list pods on node $NODE in namespace $NAMESPACE: $(tr '\n' ' ' <"$tmp/err")"

verdict="$(jq -r --arg node "$NODE" --arg plugin "$DEVICE_PLUGIN_DS" --arg toolkit "$TOOLKIT_DS" --arg finding "$FINDING" '
	def present($ds): any(.items[]?;
		.spec.nodeName == $node and .status.phase == "Running" and .metadata.deletionTimestamp == null
		and ([.metadata.ownerReferences[]?
			| select(.controller == true and .kind == "DaemonSet" and .apiVersion == "apps/v1")
			| .name] | last) == $ds);
	if present($plugin) and (present($toolkit) | not) then $finding else "ok" end
' "$tmp/pods.json")" || die "cannot read the pod list"

echo "$verdict"
[[ "$verdict" == ok ]] || exit 1
