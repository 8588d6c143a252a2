// Package read takes a snapshot of the cluster from the API server: one
// streamed LIST for nodes, three side by side for the namespace's pods (split
// by label, podparts.go) and one for its DaemonSets when asked, the GPU
// pods of every namespace for the workload's side (workloads.go), decoded
// trimmed to the fields the judges read. It is the one place the judging
// commands touch the cluster; the model it fills (pkg/snapshot) and the
// judges that read it import no client. Its trims also say what a support
// bundle keeps of each object (bundled.go), so that the reader finds in a
// bundle all it reads.
package read
