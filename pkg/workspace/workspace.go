// Package workspace is the lab's folder: applied manifests under k8s/, what
// the lab's steps write under out/, the standalone judge scripts at its
// root. Every file is written atomically (a temporary file in the same
// folder, then a rename), so a reader never sees half a file and an
// interrupted command leaves the old one in place.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Folders of the workspace.
const (
	ManifestDir = "k8s"
	OutDir      = "out"
)

// The files the lab writes under out/, one per step of docs/lab.md that has
// a result: up writes the roster and the driver's placement, optout the
// DaemonSet's counts, and the lab's run the three judges' verdicts.
const (
	RosterFile = "roster.txt" // step 2
	DriverFile = "driver.txt" // step 3
	OptOutFile = "optout.txt" // step 5
	AuditFile  = "audit.txt"  // step 6
	OrderFile  = "order.txt"  // step 7
	MatrixFile = "matrix.txt" // step 8
)

// Workspace is a folder on disk.
type Workspace struct{ Root string }

// New returns the workspace rooted at dir ("" means the current folder).
func New(dir string) Workspace {
	if dir == "" {
		dir = "."
	}
	return Workspace{Root: dir}
}

// Path returns the path of a file of the workspace, given relative to its root.
func (w Workspace) Path(rel string) string { return filepath.Join(w.Root, rel) }

// WriteManifest writes k8s/<name>.
func (w Workspace) WriteManifest(name string, data []byte) error {
	return w.WriteFile(filepath.Join(ManifestDir, name), data, 0o644)
}

// WriteOut writes out/<name>.
func (w Workspace) WriteOut(name string, data []byte) error {
	return w.WriteFile(filepath.Join(OutDir, name), data, 0o644)
}

// WriteFile atomically replaces the file at rel (relative to the root) with
// data and mode, creating its folder if needed.
func (w Workspace) WriteFile(rel string, data []byte, mode fs.FileMode) (err error) {
	path := w.Path(rel)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// InstallScripts copies each file at the root of scripts into the workspace
// root as an executable, unless a file of that name is already there: a
// script the user edited or replaced is theirs.
func (w Workspace) InstallScripts(scripts fs.FS) error {
	entries, err := fs.ReadDir(scripts, ".")
	if err != nil {
		return fmt.Errorf("install scripts: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		_, err := os.Lstat(w.Path(e.Name()))
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("install scripts: %w", err)
		}
		data, err := fs.ReadFile(scripts, e.Name())
		if err != nil {
			return fmt.Errorf("install scripts: %w", err)
		}
		if err := w.WriteFile(e.Name(), data, 0o755); err != nil {
			return err
		}
	}
	return nil
}
