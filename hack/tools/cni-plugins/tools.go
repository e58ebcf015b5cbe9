//go:build tools

// Package tools pins the CNI plugins of the test cluster's real nodes: a
// bridge per node, host-local addresses and the loopback interface.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
