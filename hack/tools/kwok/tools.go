//go:build tools

// Package tools records the commands this module builds, so that `go mod tidy`
// keeps their dependencies.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
