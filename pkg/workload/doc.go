// Package workload judges the workload's side of a GPU cluster: why a GPU
// pod is not running as asked (why.go: the cause codes and their
// precedence) and, against the nodes' verdicts, where the GPUs are
// (capacity.go); and what gpuops why is asked about (target.go). It is
// pure: the GPU pods it judges are the model's (snapshot.GPUPods, the GPU
// Operator's own rule of which pods are GPU pods), read by
// pkg/snapshot/read.
package workload
