package labspec

import (
	"fmt"

	yaml3 "go.yaml.in/yaml/v3"
)

// checkBooleans refuses operand values other than the literal true and
// false. The spec is decoded the YAML 1.1 way, in which yes, on, y, True
// are true and no, off, ~ and an empty value are false: a typo would
// silently become a deploy label, and an empty value a "false" that turns
// an operand off. A YAML 1.2 reading keeps each value as written.
func checkBooleans(data []byte) error {
	var doc yaml3.Node
	if err := yaml3.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil // not YAML: the strict decoding says why
	}
	for _, node := range field(doc.Content[0], "nodes", yaml3.SequenceNode) {
		name := ""
		if n := lookup(node, "name"); n != nil {
			name = n.Value
		}
		ops := lookup(node, "operands")
		if ops == nil || ops.Kind != yaml3.MappingNode {
			continue
		}
		for i := 0; i+1 < len(ops.Content); i += 2 {
			k, v := ops.Content[i], ops.Content[i+1]
			if v.Kind != yaml3.ScalarNode || v.Tag != "!!bool" || (v.Value != "true" && v.Value != "false") {
				return fmt.Errorf("node %s: operand %s: value %q is not true or false", name, k.Value, v.Value)
			}
		}
	}
	return nil
}

// field returns the children of a mapping's key when it is of the given kind.
func field(m *yaml3.Node, key string, kind yaml3.Kind) []*yaml3.Node {
	if v := lookup(m, key); v != nil && v.Kind == kind {
		return v.Content
	}
	return nil
}

func lookup(m *yaml3.Node, key string) *yaml3.Node {
	if m.Kind != yaml3.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
