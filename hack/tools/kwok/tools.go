//go:build tools

// Package tools pins kwok, which simulates nodes and pod lifecycles for the
// local test cluster.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
