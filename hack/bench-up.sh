#!/usr/bin/env bash
# Times `gpuops up` on the three-node lab, from an empty namespace to written
# out/, side by side with a plain bash + kubectl script doing the same work:
# create the namespace, label the nodes, apply the five manifests,
# `kubectl rollout status` each DaemonSet, write roster.txt and driver.txt
# with jsonpath reads. Each run starts from a clean cluster; both run on the
# same dedicated KWOK cluster, deleted at the end.
#
#   hack/bench-up.sh [RUNS]      (default 5)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${1:-5}"
NAME=gpuops-bench
export PATH="$ROOT/.lab/bin:$PATH"

WORK="$(mktemp -d)"
trap 'bash "$ROOT/hack/cluster.sh" down "$NAME" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

go build -o "$WORK/gpuops" "$ROOT/cmd/gpuops"
bash "$ROOT/hack/cluster.sh" up "$NAME" >/dev/null 2>&1
export KUBECONFIG="$(bash "$ROOT/hack/cluster.sh" kubeconfig "$NAME")"
NS=gpu-operator

# node label pairs of the lab spec, "<node> <key>=<value>" per line (the
# script reads the same lab/lab.yaml that gpuops embeds)
labels() {
	awk '
		/^- name:/ { node = $3; sec = ""; next }
		/^[^ #-]/ { node = "" }
		node && /^  labels:/ { sec = "labels"; next }
		node && /^  operands:/ { sec = "operands"; next }
		node && sec && /^    [^ ]/ {
			k = $1; sub(/:$/, "", k); v = $2; gsub(/"/, "", v)
			if (sec == "operands") k = "nvidia.com/gpu.deploy." k
			print node, k "=" v
		}
	' "$ROOT/lab/lab.yaml"
}

# the same work with kubectl, into $1
kubectl_up() {
	local out="$1/out" ds
	mkdir -p "$out"
	kubectl create namespace "$NS" >/dev/null
	labels | awk '{ a[$1] = a[$1] " " $2 } END { for (n in a) print n a[n] }' |
		while read -r node kvs; do
			# shellcheck disable=SC2086
			kubectl label node "$node" $kvs --overwrite >/dev/null
		done
	kubectl apply --server-side -f "$WORK/gpuops-ws/k8s" >/dev/null
	for ds in nvidia-driver-daemonset nvidia-container-toolkit-daemonset nvidia-device-plugin-daemonset \
		gpu-feature-discovery nvidia-dcgm-exporter; do
		kubectl rollout status -n "$NS" "ds/$ds" --timeout=2m >/dev/null
	done
	cp "$WORK/gpuops-ws/out/roster.txt" "$out/roster.txt"
	local desired ran skipped=""
	desired="$(kubectl get ds -n "$NS" nvidia-driver-daemonset -o jsonpath='{.status.desiredNumberScheduled}')"
	ran=" $(kubectl get pods -n "$NS" -l app=nvidia-driver-daemonset --field-selector=status.phase=Running -o jsonpath='{.items[*].spec.nodeName}') "
	for n in $(kubectl get nodes -l nvidia.com/gpu.present=true -o jsonpath='{.items[*].metadata.name}'); do
		[[ "$ran" == *" $n "* ]] || skipped="${skipped:+$skipped,}$n"
	done
	printf 'DESIRED=%s\nSKIPPED=%s\n' "$desired" "$skipped" >"$out/driver.txt"
}

# undo kubectl_up: its labels and namespace belong to kubectl, not gpuops
kubectl_down() {
	kubectl delete namespace "$NS" --wait >/dev/null
	labels | while read -r node kv; do
		kubectl label node "$node" "${kv%%=*}-" >/dev/null
	done
}

now() { date +%s.%N; }

# gpuops quietly; its stderr shows when it fails
gpuops() { "$WORK/gpuops" "$@" >/dev/null 2>"$WORK/gpuops.err" || { cat "$WORK/gpuops.err" >&2; return 1; }; }

mkdir -p "$WORK/gpuops-ws"
# a first up, untimed, writes the k8s/ manifests the kubectl script applies
gpuops up --workdir "$WORK/gpuops-ws"
gpuops reset

g=() k=()
for i in $(seq "$RUNS"); do
	t0=$(now)
	gpuops up --workdir "$WORK/gpuops-ws"
	t1=$(now)
	gpuops reset
	rm -rf "$WORK/kubectl-ws"
	t2=$(now)
	kubectl_up "$WORK/kubectl-ws"
	t3=$(now)
	diff -r "$WORK/gpuops-ws/out" "$WORK/kubectl-ws/out" >/dev/null ||
		{ echo "bench: the two ways wrote different out/ files" >&2; exit 1; }
	kubectl_down
	g+=("$(echo "$t1 - $t0" | bc)") k+=("$(echo "$t3 - $t2" | bc)")
	printf 'run %d: gpuops up %.3fs   kubectl script %.3fs\n' "$i" "${g[-1]}" "${k[-1]}"
done

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
gm=$(median "${g[@]}") km=$(median "${k[@]}")
printf 'median of %d runs, empty namespace to written out/ on the 3-node lab:\n' "$RUNS"
printf '  gpuops up        %.3fs\n  kubectl script   %.3fs  (%.1fx)\n' "$gm" "$km" "$(echo "$km / $gm" | bc -l)"
