//go:build tools

// Package tools pins helm, with which the chart in charts/copse is linted
// (make verify), rendered (the RBAC golden test) and installed (e2e/helm).
package tools

import _ "helm.sh/helm/v3/cmd/helm"
