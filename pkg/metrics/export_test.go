package metrics

// FamilyNames are the names of the verdict's families, for the docs' test.
func FamilyNames() []string {
	var names []string
	for _, f := range families {
		names = append(names, f.Name)
	}
	return names
}
