#!/usr/bin/env bash
# The kubectl+jq recipe that `task bench` measures gpuops against: the lab's
# straightforward audit, two kubectl reads as JSON into files, then jq over
# both (--slurpfile: --argjson would exceed the argument size limit).
# ROSTER is the operand catalog as JSON, [{"name", "key", "ds"}, ...], so the
# recipe cannot drift from it. Exit 1 when something is missing.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kubectl get nodes -o json >"$tmp/nodes.json"
kubectl -n "${NAMESPACE:-gpu-operator}" get pods -o json >"$tmp/pods.json"
jq -r --argjson roster "$ROSTER" --slurpfile pods "$tmp/pods.json" '
	(reduce ($pods[0].items[]
		| select(.status.phase == "Running" and .metadata.deletionTimestamp == null)
		| .spec.nodeName as $node
		| (.metadata.ownerReferences // [])[]
		| select(.controller == true and .kind == "DaemonSet")
		| "\($node)/\(.name)") as $k ({}; .[$k] = true)) as $running
	| .items | sort_by(.metadata.name)[]
	| .metadata.name as $n | (.metadata.labels // {}) as $l
	| [$roster[] | select($l[.key] == "true" and ($running["\($n)/\(.ds)"] | not)) | .name] as $missing
	| if $missing == [] then "\($n) OK" else $missing[] | "\($n) MISSING \(.)" end
' "$tmp/nodes.json" >"$tmp/audit"
cat "$tmp/audit"
! grep -q ' MISSING ' "$tmp/audit"
