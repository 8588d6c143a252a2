// Package labspec reads and validates a lab spec: which nodes get which labels,
// and which node/operand pairs the lab's opt-out and opt-in steps touch.
package labspec

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/operand"
)

// Lab is a parsed lab spec.
type Lab struct {
	Namespace string  `json:"namespace"`
	Nodes     []Node  `json:"nodes"`
	OptOut    *Target `json:"optout,omitempty"`
	OptIn     *Target `json:"optin,omitempty"`
}

// Node is one node of the lab and the labels gpuops sets on it.
type Node struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Operands maps operand name to the value of its deploy label; an operand
	// left out gets no deploy label at all (which is not the same as false).
	Operands map[string]bool `json:"operands,omitempty"`
	// GPUs is how many GPUs the node has: the lab's cluster (hack/cluster.sh)
	// makes its fake node advertise that many nvidia.com/gpu, as a device
	// plugin that registered them would; none (0) on a node without a GPU.
	// gpuops itself sets no label from it.
	GPUs int64 `json:"gpus,omitempty"`
}

// Target names one operand on one node.
type Target struct {
	Node    string `json:"node"`
	Operand string `json:"operand"`
}

// Load reads and parses the lab spec file; no file ("") is no spec (nil).
func Load(file string, roster []operand.Operand) (*Lab, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("lab spec: %w", err)
	}
	return Parse(data, roster)
}

// Parse decodes and validates a lab spec against the operand roster.
func Parse(data []byte, roster []operand.Operand) (*Lab, error) {
	var lab Lab
	if err := yaml.UnmarshalStrict(data, &lab); err != nil {
		return nil, fmt.Errorf("invalid lab spec: %w", err)
	}
	if err := checkBooleans(data); err != nil {
		return nil, fmt.Errorf("invalid lab spec: %w", err)
	}
	if err := lab.validate(roster); err != nil {
		return nil, fmt.Errorf("invalid lab spec: %w", err)
	}
	return &lab, nil
}

func (l *Lab) validate(roster []operand.Operand) error {
	if errs := validation.IsDNS1123Label(l.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", l.Namespace, strings.Join(errs, "; "))
	}
	if len(l.Nodes) == 0 {
		return fmt.Errorf("no nodes")
	}
	seen := map[string]bool{}
	for _, n := range l.Nodes {
		if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
			return fmt.Errorf("node name %q: %s", n.Name, strings.Join(errs, "; "))
		}
		if seen[n.Name] {
			return fmt.Errorf("node %q is listed twice", n.Name)
		}
		seen[n.Name] = true
		if n.GPUs < 0 {
			return fmt.Errorf("node %s: gpus %d: not a count", n.Name, n.GPUs)
		}
		for k, v := range n.Labels {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return fmt.Errorf("node %s: label key %q: %s", n.Name, k, strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return fmt.Errorf("node %s: label %s value %q: %s", n.Name, k, v, strings.Join(errs, "; "))
			}
			if operand.IsDeployLabel(k) {
				return fmt.Errorf("node %s: label %s: set deploy labels under operands, not labels", n.Name, k)
			}
		}
		for name := range n.Operands {
			if _, err := operand.Lookup(roster, name); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
	}
	for step, t := range map[string]*Target{"optout": l.OptOut, "optin": l.OptIn} {
		if t == nil {
			continue
		}
		if !seen[t.Node] {
			return fmt.Errorf("%s: node %q is not a node of the lab", step, t.Node)
		}
		if _, err := operand.Lookup(roster, t.Operand); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
	}
	return nil
}

// NodeLabels returns every label gpuops sets on the node: its plain labels and
// one deploy label per listed operand, "true" or "false".
func (n Node) NodeLabels(roster []operand.Operand) map[string]string {
	out := make(map[string]string, len(n.Labels)+len(n.Operands))
	for k, v := range n.Labels {
		out[k] = v
	}
	for _, o := range roster {
		if on, ok := n.Operands[o.Name]; ok {
			out[o.LabelKey()] = fmt.Sprint(on)
		}
	}
	return out
}
