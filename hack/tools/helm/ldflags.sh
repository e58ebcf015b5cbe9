#!/usr/bin/env bash
# Prints the -ldflags helm's own release build sets, for the versions pinned in
# this module's go.mod: helm's version, and the Kubernetes version that
# `helm template` and `helm lint` assume without a cluster (from client-go,
# as helm's Makefile derives it). Used by the Makefile's helm target and by
# e2e/framework/helm.go, so both build the same binary.
set -euo pipefail
cd "$(dirname "$0")"
export GOWORK=off
helm_version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go) # v0.<minor>.<patch>
IFS=. read -r major minor _ <<<"${client_go#v}"
major=$((major + 1))
flags="-s -w -X helm.sh/helm/v3/internal/version.version=${helm_version}"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	flags+=" -X ${pkg}.k8sVersionMajor=${major} -X ${pkg}.k8sVersionMinor=${minor}"
done
echo "$flags"
