#!/usr/bin/env bash
# Aligns the dependencies of the tools modules with the kube module's, so that
# the Go build cache compiles each shared package once: after the Kubernetes
# binaries, etcd and kwok then compile only their own packages (a cold build
# compiles about 30% less source). Run it after changing a pin:
#
#   hack/tools/align.sh [MODULE...]     default: every module under hack/tools but kube
#
# For every module that provides packages to both builds, a module here is raised to the
# kube module's version when that is newer; nothing is ever lowered, and the
# kube module is never changed (it keeps Kubernetes' own tested set).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
export GOWORK=off

# build_list DIR: "path version" of every module that provides a package to
# the commands DIR builds (the imports of its tools.go).
build_list() {
	(cd "$1" && go list -e -deps -tags tools \
		-f '{{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}' .) | sort -u
}

# newer A B: the newer of two module versions. sort -V with "-" read as "~",
# which sorts before the end, so that v1.2.3-pre (and a pseudo-version based
# on it) comes before v1.2.3, as in semver.
newer() {
	printf '%s\n%s\n' "${1//-/\~}" "${2//-/\~}" | sort -V | tail -n1 | tr '~' -
}

kube="$(build_list kube)"
mods=("$@")
if [[ ${#mods[@]} -eq 0 ]]; then
	for d in */; do
		[[ "$d" != kube/ && -f "$d/go.mod" ]] && mods+=("${d%/}")
	done
fi
for m in "${mods[@]}"; do
	upgrades=()
	while read -r path have want; do
		[[ "$have" != "$want" && "$(newer "$have" "$want")" == "$want" ]] && upgrades+=("$path@$want")
	done < <(join <(build_list "$m") <(echo "$kube"))
	echo "align: $m: ${#upgrades[@]} modules raised to the kube module's versions" >&2
	if [[ ${#upgrades[@]} -gt 0 ]]; then
		(cd "$m" && go get "${upgrades[@]}" && go mod tidy)
	fi
done
