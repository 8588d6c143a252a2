//go:build tools

// The other command this module builds (main.go is the control plane's), so
// that `go mod tidy` keeps its dependencies.
package main

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
)
