package metrics

import "github.com/gpuops/gpuops/pkg/promtext"

// FamilyNames are the names of the verdict's families, for the docs' test.
func FamilyNames() []string {
	return promtext.NewTable(families...).Names()
}
