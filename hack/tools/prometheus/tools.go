//go:build tools

// Package tools records the commands this module builds, so that `go mod tidy`
// keeps their dependencies.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
