//go:build tools

// Package tools pins etcd for the local test cluster. etcd's go.mod has
// replace directives, so it cannot be installed with `go install`; building
// it from this module works.
package tools

import _ "go.etcd.io/etcd/server/v3"
