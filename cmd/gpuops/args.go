package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// checkNodeName refuses a NODE argument that no node can be named, before
// it reaches an API path.
func checkNodeName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return usageError(fmt.Errorf("invalid node name %q: %s", name, strings.Join(errs, "; ")))
	}
	return nil
}
