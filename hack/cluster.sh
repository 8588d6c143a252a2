#!/usr/bin/env bash
# The offline lab cluster: a KWOK cluster on the binary runtime, built from
# local binaries only (hack/build-tools.sh), with all state in the repo.
#
#   hack/cluster.sh up [NAME]          start NAME (default gpuops), or ensure it is
#                                      running; then create the lab nodes
#   hack/cluster.sh down [NAME]        delete NAME (no error if it does not exist)
#   hack/cluster.sh kubeconfig [NAME]  print the path of NAME's kubeconfig
#   hack/cluster.sh nodes [SPEC]       print the lab nodes' manifests (see below)
#   hack/cluster.sh list               list the clusters of this repo
#   hack/cluster.sh prune [PREFIX]     delete every cluster of this repo whose name
#                                      starts with PREFIX (all without PREFIX)
#
# State lives in .lab/clusters (KWOK_WORKDIR); the kubeconfig is .lab/kubeconfig
# for the default cluster and .lab/kubeconfig-NAME for others. ~/.kube is never
# touched.
#
# Ports: kwokctl alone gives every new cluster the same ports (it scans down
# from 32767 for one that is free at that instant), so clusters created at the
# same moment (go test's parallel packages, the lab beside a test run, another
# checkout) collide, and kwokctl then waits minutes on a server that died with
# `bind: address already in use`. So `up` picks six random free ports itself
# (below the kernel's ephemeral range), watches the components while kwokctl
# starts them, and as soon as one exits deletes the attempt and retries with
# fresh ports (LAB_START_ATTEMPTS, default 3). LAB_PORTS="ETCD ETCD_PEER
# APISERVER KWOK CONTROLLER_MANAGER SCHEDULER" (or the first few of them)
# names the ports the first start of a new cluster tries.
#
# Lab nodes: `up` reads the nodes (the `- name:` items under `nodes:`, and
# each one's `gpus:`) from the lab spec file named by LAB_NODES (default
# lab/lab.yaml) and creates each missing one as a plain KWOK fake node (Ready,
# capacity with as many nvidia.com/gpu as its gpus: says and none without it,
# no taint, no GPU labels). Existing nodes are left as they are. LAB_NODES=
# (empty) creates none. `hack/cluster.sh nodes [SPEC]` prints the manifests
# it would create.
#
# Heartbeats: kwokctl's --heartbeat-factor (default 5) stretches the node
# lease, the node status updates and the controller manager's grace period
# alike. LAB_HEARTBEAT_FACTOR sets it for a new cluster: thousands of nodes
# simulated on two cores should not spend them renewing a lease every 50 s
# (task bench sets 30).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${LAB_BIN:-$ROOT/.lab/bin}"
DEFAULT_NAME=gpuops

export KWOK_WORKDIR="$ROOT/.lab/clusters"
export KUBECACHEDIR="$ROOT/.lab/kube-cache" # kubectl's discovery cache, not ~/.kube/cache
export PATH="$BIN:$PATH"
if [[ -x "$BIN/kubectl" ]]; then
	export KWOK_KUBECTL_BINARY="$BIN/kubectl"
fi

# kwokctl's own log level (DEBUG, INFO, WARN, ERROR).
KWOKCTL=(kwokctl -v "${KWOKCTL_LOG_LEVEL:-WARN}")

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: error: $*" >&2; exit 1; }

kubeconfig_path() {
	if [[ "$1" == "$DEFAULT_NAME" ]]; then
		echo "$ROOT/.lab/kubeconfig"
	else
		echo "$ROOT/.lab/kubeconfig-$1"
	fi
}

exists() { [[ -d "$KWOK_WORKDIR/clusters/$1" ]]; }

reachable() {
	[[ -s "$2" ]] && kubectl --kubeconfig "$2" --request-timeout=5s get --raw /readyz >/dev/null 2>&1
}

# lab_nodes FILE: "NAME GPUS" for each `- name:` item of the top-level
# `nodes:` list, GPUS its `gpus:` (a key of the same item, in block style as
# lab/lab.yaml writes it), 0 without one.
lab_nodes() {
	awk '
		function flush() { if (name != "") print name, gpus; name = "" }
		/^nodes:[ \t]*$/ { in_nodes = 1; indent = -1; next }
		in_nodes && /^[^ \t#-]/ { flush(); in_nodes = 0 }
		in_nodes && match($0, /^[ \t]*- +name:/) {
			lead = $0; sub(/-.*/, "", lead)
			if (indent < 0) indent = length(lead)
			if (length(lead) != indent) next
			flush()
			v = $0; sub(/^[ \t]*- +name:[ \t]*/, "", v); sub(/[ \t]+#.*$/, "", v)
			gsub(/^["'\'']|["'\''][ \t]*$/, "", v); sub(/[ \t]+$/, "", v)
			name = v; gpus = 0; next
		}
		in_nodes && name != "" && match($0, /^[ \t]*gpus:/) {
			lead = $0; sub(/g.*/, "", lead)
			if (length(lead) != indent + 2) next
			v = $0; sub(/^[ \t]*gpus:[ \t]*/, "", v); sub(/[ \t]*(#.*)?$/, "", v)
			gpus = v
		}
		END { flush() }
	' "$1"
}

# fake_node NAME GPUS: a KWOK fake node manifest. A node with GPUs advertises
# them (nvidia.com/gpu), as a node whose device plugin has registered them
# does, so that gpuops health sees usable GPU nodes when the operands run; a
# node without advertises none, so the scheduler never places GPU work there.
fake_node() {
	local gpu=""
	if (($2 > 0)); then
		gpu=", nvidia.com/gpu: \"$2\""
	fi
	cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: $1
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: $1
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  capacity: {cpu: "32", memory: 256Gi, pods: "110"$gpu}
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"$gpu}
YAML
}

# read_lab_nodes SPEC: the caller's arrays names and gpus, checked.
read_lab_nodes() {
	local name count
	while read -r name count; do
		[[ "$name" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "invalid node name '$name' in $1"
		[[ "$count" =~ ^[0-9]+$ ]] || die "node $name: gpus '$count' is not a count in $1"
		names+=("$name")
		gpus+=("$count")
	done < <(lab_nodes "$1")
	[[ ${#names[@]} -gt 0 ]] || die "no '- name:' entries under 'nodes:' in $1"
}

# nodes [SPEC]: the manifests up creates for the lab spec's nodes.
nodes() {
	local names=() gpus=() i
	read_lab_nodes "${1:-$ROOT/lab/lab.yaml}"
	for i in "${!names[@]}"; do fake_node "${names[i]}" "${gpus[i]}"; done
}

ensure_lab_nodes() {
	local kc=$1 spec="${LAB_NODES-$ROOT/lab/lab.yaml}"
	if [[ -z "$spec" ]]; then
		return 0
	fi
	if [[ ! -f "$spec" ]]; then
		log "warning: lab spec $spec not found: no lab nodes created (set LAB_NODES=<file>)"
		return 0
	fi
	local names=() gpus=() have missing=() i
	read_lab_nodes "$spec"
	have=" $(kubectl --kubeconfig "$kc" get nodes -o jsonpath='{.items[*].metadata.name}') "
	for i in "${!names[@]}"; do
		[[ "$have" == *" ${names[i]} "* ]] || missing+=("$i")
	done
	if [[ ${#missing[@]} -gt 0 ]]; then
		for i in "${missing[@]}"; do fake_node "${names[i]}" "${gpus[i]}"; done | kubectl --kubeconfig "$kc" create -f - >&2
	fi
	kubectl --kubeconfig "$kc" wait --for=condition=Ready --timeout=60s "${names[@]/#/node/}" >/dev/null
	log "lab nodes ready: ${names[*]}"
}

# listening_ports: the TCP ports something listens on now (IPv4 and IPv6).
listening_ports() {
	local f local_addr st
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r "$f" ]] || continue
		while read -r _ local_addr _ st _; do
			[[ "$st" == 0A ]] && echo $((16#${local_addr##*:}))
		done < <(tail -n +2 "$f")
	done
}

# pick_ports N: N distinct random ports that nothing listens on, between 10000
# and the start of the ephemeral range (where outgoing connections take theirs).
pick_ports() {
	local n=$1 lo=10000 hi busy picked=() p tries=0
	read -r hi _ </proc/sys/net/ipv4/ip_local_port_range
	busy=" $(listening_ports | tr '\n' ' ') "
	while ((${#picked[@]} < n)); do
		((++tries < 10000)) || die "no $n free ports between $lo and $hi"
		p=$((lo + SRANDOM % (hi - lo)))
		[[ "$busy" == *" $p "* ]] && continue
		busy+="$p "
		picked+=("$p")
	done
	echo "${picked[*]}"
}

# write_config FILE ETCD ETCD_PEER APISERVER KWOK CONTROLLER_MANAGER SCHEDULER:
# hack/kwokctl.yaml with those ports (kwokctl has no flag for etcd's peer
# port), and KWOK's default stages beside its own.
write_config() {
	local file=$1 conf="$ROOT/hack/kwokctl.yaml"
	shift
	{
		sed '/^options:/q' "$conf"
		printf '  etcdPort: %s\n  etcdPeerPort: %s\n  kubeApiserverPort: %s\n  kwokControllerPort: %s\n  kubeControllerManagerPort: %s\n  kubeSchedulerPort: %s\n' "$@"
		sed '1,/^options:/d' "$conf"
		cat "$BIN/kwok-stages.yaml"
	} >"$file"
}

# dead_component NAME SINCE: print the first component of NAME that kwokctl
# started after the file SINCE was made (its pid files) and that is no longer
# running, and succeed; fail when all run.
dead_component() {
	local f pid stat
	for f in "$KWOK_WORKDIR/clusters/$1/pids/"*.pid; do
		[[ -f "$f" && "$f" -nt "$2" ]] || continue
		pid=$(<"$f")
		[[ "$pid" =~ ^[0-9]+$ ]] || continue # being written
		# A component that exited stays a zombie while kwokctl, its parent, runs.
		if ! { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || [[ "${stat##*) }" == [ZX]* ]]; then
			basename "$f" .pid
			return 0
		fi
	done
	return 1
}

# watched NAME KWOKCTL_ARGS...: run kwokctl, which starts NAME's components,
# and end it at once, with status 3, if one of them exits meanwhile or is gone
# when it returns (saying which and why); else kwokctl's own status.
watched() {
	local name=$1 since="$ROOT/.lab/.start-$1" out="$ROOT/.lab/.kwokctl-$1.log" pid status=0 dead="" logf
	shift
	touch "$since"
	# kwokctl's own log is shown only when it fails on its own.
	"${KWOKCTL[@]}" "$@" >"$out" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && ! dead=$(dead_component "$name" "$since"); do
		sleep 0.5
	done
	if [[ -z "$dead" ]]; then
		wait "$pid" || status=$?
		((status != 0)) || ! dead=$(dead_component "$name" "$since") || status=3
	else
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		status=3
	fi
	rm -f "$since"
	if ((status == 3)); then
		logf="$KWOK_WORKDIR/clusters/$name/logs/$dead.log"
		log "$name: $dead exited: $(grep -o -m1 'listen tcp [^"]*address already in use' "$logf" 2>/dev/null || tail -n 2 "$logf" 2>/dev/null)"
	elif ((status != 0)); then
		cat "$out" >&2
	fi
	rm -f "$out"
	return "$status"
}

create() {
	local name=$1 kc=$2 attempts=${LAB_START_ATTEMPTS:-3} attempt status
	local conf="$ROOT/.lab/kwokctl-$name.yaml" first ports
	read -r -a first <<<"${LAB_PORTS:-}"
	((${#first[@]} <= 6)) || die "LAB_PORTS: at most six ports, got '${LAB_PORTS}'"
	for ((attempt = 1; attempt <= attempts; attempt++)); do
		# shellcheck disable=SC2207 # six numbers
		ports=("${first[@]}" $(pick_ports $((6 - ${#first[@]}))))
		first=()
		write_config "$conf" "${ports[@]}"
		rm -f "$kc"
		status=0
		watched "$name" --config "$conf" create cluster \
			--name "$name" \
			--runtime binary \
			--kube-apiserver-binary "$BIN/kube-apiserver" \
			--kube-controller-manager-binary "$BIN/kube-controller-manager" \
			--kube-scheduler-binary "$BIN/kube-scheduler" \
			--kwok-controller-binary "$BIN/kwok" \
			--etcd-binary "$BIN/etcd" \
			--disable-qps-limits \
			${LAB_HEARTBEAT_FACTOR:+--heartbeat-factor "$LAB_HEARTBEAT_FACTOR"} \
			--kubeconfig "$kc" \
			--wait 2m || status=$?
		rm -f "$conf"
		((status != 0)) || return 0
		"${KWOKCTL[@]}" delete cluster --name "$name" --kubeconfig "$kc" >&2 || true
		((status == 3)) || die "kwokctl create cluster $name failed (exit $status)"
		log "$name: start $attempt of $attempts lost a port (ports ${ports[*]}); retrying with fresh ports"
	done
	die "$name: a component exited in each of $attempts starts (see above)"
}

up() {
	local name=$1 kc start=$SECONDS
	kc="$(kubeconfig_path "$name")"
	"$ROOT/hack/build-tools.sh" lab
	if exists "$name"; then
		if [[ ! -s "$kc" ]]; then
			"${KWOKCTL[@]}" get kubeconfig --name "$name" >"$kc" 2>/dev/null || true
		fi
		if reachable "$name" "$kc"; then
			log "$name already running"
		else
			log "$name exists but is not reachable; starting it"
			if ! watched "$name" start cluster --name "$name" --wait 30s || ! reachable "$name" "$kc"; then
				log "could not start $name; recreating it"
				"${KWOKCTL[@]}" delete cluster --name "$name" --kubeconfig "$kc" >&2 || true
				create "$name" "$kc"
			fi
		fi
	else
		log "creating $name"
		create "$name" "$kc"
	fi
	reachable "$name" "$kc" || die "$name is not reachable with $kc"
	ensure_lab_nodes "$kc"
	log "$name up in $((SECONDS - start))s"
	echo "# point kubectl at the lab cluster:"
	echo "export KUBECONFIG=$kc"
}

down() {
	local name=$1 kc
	kc="$(kubeconfig_path "$name")"
	if exists "$name"; then
		"${KWOKCTL[@]}" delete cluster --name "$name" --kubeconfig "$kc" >&2
	else
		log "$name does not exist"
	fi
	rm -f "$kc"
}

list() {
	[[ -d "$KWOK_WORKDIR/clusters" ]] || return 0
	local d
	for d in "$KWOK_WORKDIR"/clusters/*/; do
		[[ -d "$d" ]] && basename "$d"
	done
	return 0
}

prune() {
	local prefix=$1 name
	for name in $(list); do
		if [[ "$name" == "$prefix"* ]]; then
			log "pruning $name"
			down "$name" || true
		fi
	done
}

cmd="${1:-}"
case "$cmd" in
up) up "${2:-$DEFAULT_NAME}" ;;
down) down "${2:-$DEFAULT_NAME}" ;;
kubeconfig) kubeconfig_path "${2:-$DEFAULT_NAME}" ;;
nodes) nodes "${2:-}" ;;
list) list ;;
prune) prune "${2:-}" ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
