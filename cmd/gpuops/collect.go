package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/collect"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workspace"
)

type collectOptions struct {
	cliopts.Env
	Lab       cliopts.Lab
	file      string
	redact    bool
	chunkSize int
	asYAML    bool
	gzipped   bool
	ext       string // of the output's name, without .gz
}

func collectCommand(e cliopts.Env) *cli.Command {
	o := &collectOptions{Env: e}
	return command(&cli.Command{
		Name:  "collect",
		Usage: "write a support bundle: what the judges read, for any judge's --from on another machine",
		Description: "Reads what every judge reads, side by side, whole objects (the pods with the judges' own selectors:\n" +
			"the operator namespace's, and elsewhere those not ended, Failed or Succeeded, of which it keeps the GPU\n" +
			"pods and those the kubelet refused, and of the others their name, controller, node and phase): nodes,\n" +
			"the operator namespace's pods, DaemonSets and ControllerRevisions, the GPU Operator's Deployment, the\n" +
			"ClusterPolicy and its CRD (the schema's field names: the release when nothing else names it),\n" +
			"NVIDIADrivers, the ConfigMaps the policy names, the DRA driver's ResourceSlices,\n" +
			"ResourceClaims and DeviceClasses, the Warning Events on pods and the driver upgrade controller's on\n" +
			"nodes, the ReplicaSets of GPU pods' namespaces. Writes one Kubernetes List whose first item, a\n" +
			"gpuops.io Bundle, says gpuops' version, when, the server's version and what could not be read and why\n" +
			"(RBAC: Forbidden; not served: NotFound), also said on stderr. Never Secrets; no managedFields but a\n" +
			"node's entries that own a label a judge traces, its cordon or its taints (who took it out of service);\n" +
			"no container's env, no last-applied configuration. --redact replaces node, pod and namespace names by\n" +
			"salted hashes, the same name the same hash in the whole bundle. Any judge reads it with --from FILE.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Destination: &o.file,
				Usage: "write the bundle to `FILE`: .yaml or .json, gzipped when the name ends in .gz; - or none: YAML on stdout"},
			&cli.BoolFlag{Name: "redact", Destination: &o.redact,
				Usage: "replace node, pod and namespace names by hashes (the same name, the same hash), for a bundle posted in public"},
			&cli.IntFlag{Name: "chunk-size", Destination: &o.chunkSize,
				Usage: "return large lists in chunks of this many objects, as kubectl get --chunk-size (progress on stderr per chunk); 0, the default, reads each list whole, as the judges do, which the API server answers quicker"},
			o.Lab.JudgeFlag(),
		},
	}, o)
}

// Complete resolves the namespace and reads the output's format from its
// name.
func (o *collectOptions) Complete(*cli.Context) error {
	name := strings.TrimSuffix(o.file, ".gz")
	o.gzipped, o.ext = name != o.file, filepath.Ext(name)
	o.asYAML = o.file == "" || o.file == "-" || o.ext == ".yaml" || o.ext == ".yml"
	return o.Lab.Complete(o.Kube)
}

// Validate checks the flags; it changes nothing.
func (o *collectOptions) Validate() error {
	if o.chunkSize < 0 {
		return cliopts.UsageError(fmt.Errorf("--chunk-size %d: want 0 (each list whole) or a positive number", o.chunkSize))
	}
	if !o.asYAML && o.ext != ".json" {
		return cliopts.UsageError(fmt.Errorf("--output %q: want a name ending in .yaml, .yml or .json (then .gz to gzip it), or -", o.file))
	}
	return nil
}

func (o *collectOptions) Run(ctx context.Context) error {
	c, err := kube.ConnectReading(o.Kube)
	if err != nil {
		return err
	}
	co := collect.Options{Namespace: o.Lab.Namespace, Version: report.ClientVersionInfo(gpuopsVersion).ClientVersion.GitVersion,
		Progress: o.ErrOut, PageSize: o.chunkSize}
	co.Context, co.Server = o.Kube.Target()
	h, items, err := collect.Collect(ctx, c, co)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if o.redact {
		salt := make([]byte, 16)
		_, _ = rand.Read(salt)
		objs, err := bundle.Maps(items)
		if err != nil {
			return err
		}
		bundle.Redact(h, objs, salt)
		err = writeBundle(&buf, o.gzipped, o.asYAML, h, objs)
	} else {
		err = writeBundle(&buf, o.gzipped, o.asYAML, h, items)
	}
	if err != nil {
		return err
	}
	for _, nr := range h.NotRead {
		where := ""
		if nr.Namespace != "" {
			where = " in namespace " + nr.Namespace
		}
		fmt.Fprintf(o.ErrOut, "collect: %s%s not read (%s): %s\n", nr.Resource, where, nr.Reason, nr.Message)
	}
	if o.file == "" || o.file == "-" {
		_, err = o.Out.Write(buf.Bytes())
		return err
	}
	abs, err := filepath.Abs(o.file)
	if err != nil {
		return err
	}
	if err := workspace.New(filepath.Dir(abs)).WriteFile(filepath.Base(abs), buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "collect: wrote %s: %d objects\n", o.file, len(items))
	return nil
}

// writeBundle writes the bundle as the output's name asks.
func writeBundle[T any](w io.Writer, gzipped, asYAML bool, h *bundle.Header, items []T) error {
	if !gzipped {
		return bundle.Write(w, asYAML, h, items)
	}
	z := gzip.NewWriter(w)
	if err := bundle.Write(z, asYAML, h, items); err != nil {
		return err
	}
	return z.Close()
}
