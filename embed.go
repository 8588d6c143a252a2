// Package gpuops holds the files that the gpuops binary carries inside it: the
// kustomize bases of the operand DaemonSets, the default lab spec and the two
// standalone judge scripts.
package gpuops

import "embed"

// Kustomize is the kustomize/ tree: one base per operand under kustomize/operands/<name>.
//
//go:embed kustomize
var Kustomize embed.FS

// DefaultLab is the lab spec of docs/lab.md, used when no --lab file is given.
//
//go:embed lab/lab.yaml
var DefaultLab []byte

// Scripts are the standalone judges that gpuops installs into a workspace.
//
//go:embed operand-audit.sh order-check.sh
var Scripts embed.FS
