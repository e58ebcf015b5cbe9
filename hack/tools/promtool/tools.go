//go:build tools

// Package tools pins Prometheus' promtool, which tests copse's alert rules
// (charts/copse/alerts) with `promtool test rules`.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
