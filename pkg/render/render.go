// Package render builds the operand DaemonSets from the kustomize bases that
// are embedded in the binary. Kustomize reads only its in-memory file system,
// never the disk, so the binary renders the same objects wherever it runs.
package render

import (
	"fmt"
	"io/fs"
	"path"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuops/gpuops/pkg/operand"
)

// BaseDir is where an operand's kustomize base lives inside the kustomize/ tree.
func BaseDir(o operand.Operand) string { return path.Join("kustomize", "operands", o.Name) }

// Manifest is one operand's rendered DaemonSet.
type Manifest struct {
	Operand operand.Operand
	YAML    []byte
}

// Operands renders each operand's base into namespace ns, in roster order.
// tree is the embedded file system that holds the kustomize/ directory.
func Operands(tree fs.FS, roster []operand.Operand, ns string) ([]Manifest, error) {
	mem, err := loadInMemory(tree)
	if err != nil {
		return nil, err
	}
	out := make([]Manifest, 0, len(roster))
	for _, o := range roster {
		// A throw-away overlay puts the base into the chosen namespace.
		kust := fmt.Sprintf("namespace: %s\nresources:\n- ../../%s\n", ns, BaseDir(o))
		res, err := overlay(mem, o.Name, kust)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", o.Name, err)
		}
		if err := checkOne(res, o); err != nil {
			return nil, err
		}
		y, err := res.AsYaml()
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", o.Name, err)
		}
		out = append(out, Manifest{Operand: o, YAML: y})
	}
	return out, nil
}

// checkOne guards the catalog ↔ base agreement at render time as well as in tests.
func checkOne(res resmap.ResMap, o operand.Operand) error {
	if res.Size() != 1 {
		return fmt.Errorf("render %s: base yields %d objects, want 1 DaemonSet", o.Name, res.Size())
	}
	r := res.Resources()[0]
	if r.GetKind() != "DaemonSet" || r.GetName() != o.DaemonSet {
		return fmt.Errorf("render %s: base yields %s %s, want DaemonSet %s", o.Name, r.GetKind(), r.GetName(), o.DaemonSet)
	}
	return nil
}

// Overlay renders a throw-away overlay of a base of the tree: kustomization
// is its kustomization.yaml without the apiVersion and kind lines, naming
// the base as ../../<path in tree>.
func Overlay(tree fs.FS, name, kustomization string) (resmap.ResMap, error) {
	mem, err := loadInMemory(tree)
	if err != nil {
		return nil, err
	}
	return overlay(mem, name, kustomization)
}

func overlay(mem filesys.FileSystem, name, kustomization string) (resmap.ResMap, error) {
	dir := path.Join("/overlays", name)
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + kustomization
	if err := mem.WriteFile(path.Join(dir, "kustomization.yaml"), []byte(kust)); err != nil {
		return nil, err
	}
	return krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
}

func loadInMemory(tree fs.FS) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(tree, "kustomize", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		return mem.WriteFile("/"+p, data)
	})
	if err != nil {
		return nil, fmt.Errorf("load embedded kustomize tree: %w", err)
	}
	return mem, nil
}
