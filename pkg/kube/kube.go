// Package kube turns kubectl's connection flags into API clients.
package kube

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	// Auth providers a kubeconfig may name (OIDC); exec credential plugins
	// need no import.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

// DefaultNamespace is where the GPU Operator and its operands live unless a
// lab spec or -n says otherwise.
const DefaultNamespace = "gpu-operator"

// DefaultRequestTimeout bounds each API request unless --request-timeout
// says otherwise (kubectl's own default is no bound).
const DefaultRequestTimeout = "30s"

// Flags are kubectl's connection flags: every one of cli-runtime's
// ConfigFlags, with kubectl's meanings, and --request-timeout beside them.
// client-go takes a pod's service account only when the flags leave its
// config as it defaults (so does kubectl: kubectl --request-timeout=5s in a
// pod dials localhost:8080); gpuops has a timeout by default, so it sets
// the timeout on the config once it has been chosen.
type Flags struct {
	*genericclioptions.ConfigFlags
	RequestTimeout string
}

// NewFlags returns the connection flags with gpuops' defaults.
func NewFlags() *Flags {
	cf := genericclioptions.NewConfigFlags(false)
	cf.Timeout = nil // see Flags
	return &Flags{ConfigFlags: cf, RequestTimeout: DefaultRequestTimeout}
}

// AddFlags adds the flags to a flag set, as kubectl names them.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	f.ConfigFlags.AddFlags(fs)
	fs.StringVar(&f.RequestTimeout, "request-timeout", f.RequestTimeout,
		"how long to wait for each API request: a duration (1s, 2m, 3h), a bare number of seconds, or 0 for no bound")
}

// Clients are the API handles a command works with.
type Clients struct {
	Config *rest.Config         // JSON, for clients of any type (dynamic, apply)
	Kube   kubernetes.Interface // protobuf, for the built-in types
}

// Connect resolves the connection the way kubectl does (flags, then the
// kubeconfig: --kubeconfig, else $KUBECONFIG, else ~/.kube/config; in a pod
// with none, its service account) and builds the clients. It makes no API
// call.
func Connect(f *Flags) (*Clients, error) {
	cfg, err := resolve(f)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(protobuf(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return &Clients{Config: cfg, Kube: cs}, nil
}

// ConnectReading resolves the connection as Connect does and builds only
// the client a one-shot judge reads with (see reading): a judge needs no
// other, and building the typed clientset costs about 1,000 allocations at
// a process's start.
func ConnectReading(f *Flags) (kubernetes.Interface, error) {
	cfg, err := resolve(f)
	if err != nil {
		return nil, err
	}
	return reading(cfg)
}

// resolve is the connection the flags name, with gpuops' timeout and pace.
func resolve(f *Flags) (*rest.Config, error) {
	timeout, err := clientcmd.ParseTimeout(f.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("--request-timeout: %w", err)
	}
	// One loader: it reads the kubeconfig files once for both calls.
	loader := f.ToRawKubeConfigLoader()
	if err := checkConfigured(loader, *f.APIServer != ""); err != nil {
		return nil, err
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if f.WrapConfigFn != nil { // as f.ToRESTConfig would
		cfg = f.WrapConfigFn(cfg)
	}
	cfg.Timeout = timeout
	// How polite gpuops is to an API server: it reads with one LIST per
	// resource (the judges' pods in three parts), never one request per node;
	// only writing labels costs a request per node, at most 32 in flight
	// (pkg/provision), paced here at 100 a second (client-go's default of 5
	// would take 17 minutes to label 5,000 nodes). API Priority and Fairness
	// still queues or rejects what the server cannot take, and client-go waits
	// and retries on 429. No flag raises this: at 1,000 nodes `gpuops up` is
	// within 2% of the DaemonSet controller's own time (docs/scale.md).
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// protobuf makes the built-in types travel as protobuf: several times faster
// to encode on the server and to decode here than JSON, and smaller on the
// wire.
func protobuf(cfg *rest.Config) *rest.Config {
	pb := rest.CopyConfig(cfg)
	pb.ContentType = runtime.ContentTypeProtobuf
	pb.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return pb
}

// reading is a client of the built-in types over HTTP/1.1, for a judge's
// one-shot read. Its LISTs run side by side (pkg/snapshot/read); over
// HTTP/2 they share one connection, whose frames one goroutine writes on
// the server and one reads here, TLS included, while over HTTP/1.1 each
// gets a connection of its own, which spreads that work over the cores of
// both (docs/scale.md, "Mechanisms").
func reading(c *rest.Config) (kubernetes.Interface, error) {
	cfg := protobuf(c)
	h1 := rest.CopyConfig(cfg)
	h1.NextProtos = []string{"http/1.1"}
	hc, err := rest.HTTPClientFor(h1)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cs, nil
}

// ForWatching is Kube without the per-request timeout, which would cut
// every long watch short; informers bound their watches themselves.
func (c *Clients) ForWatching() (kubernetes.Interface, error) {
	cfg := protobuf(c.Config)
	cfg.Timeout = 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cs, nil
}

// checkConfigured refuses a connection that names no cluster (an empty
// kubeconfig, a $KUBECONFIG that points nowhere, no ~/.kube/config, no
// --server, not in a pod), where client-go would quietly fall back to
// http://localhost:8080 and the user would read "connection refused" about
// a server they never chose. server says --server was given.
func checkConfigured(loader clientcmd.ClientConfig, server bool) error {
	raw, err := loader.RawConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if len(raw.Clusters) > 0 || server {
		return nil
	}
	_, err = rest.InClusterConfig()
	if err == nil {
		return nil
	}
	where := strings.Join(loader.ConfigAccess().GetLoadingPrecedence(), ", ")
	if errors.Is(err, rest.ErrNotInCluster) {
		return fmt.Errorf("kubeconfig: no cluster configured in %s, no --server, not in a pod", where)
	}
	return fmt.Errorf("kubeconfig: no cluster configured in %s, and the in-cluster config fails: %w", where, err)
}

// Target names what the flags connect to, for reports read far from the
// cluster: the kubeconfig context (--context, else the kubeconfig's current
// one; empty for --server alone or a pod's service account) and the API
// server's URL (empty when the flags name none).
func (f *Flags) Target() (context, server string) {
	if f.Context != nil && *f.Context != "" {
		context = *f.Context
	} else if raw, err := f.ToRawKubeConfigLoader().RawConfig(); err == nil {
		context = raw.CurrentContext
	}
	if cfg, err := f.ToRESTConfig(); err == nil {
		server = cfg.Host
	}
	return context, server
}

// ForContext is the same connection flags with --context name: another
// kubeconfig context reached with the same kubeconfig, timeout and
// impersonation. Every exported field is carried over by reflection, so a
// flag cli-runtime adds later is not silently dropped; copying the struct
// itself would copy its locks and cached clients.
func (f *Flags) ForContext(name string) *Flags {
	cf := genericclioptions.NewConfigFlags(false)
	src, dst := reflect.ValueOf(f.ConfigFlags).Elem(), reflect.ValueOf(cf).Elem()
	for i := range src.NumField() {
		if src.Type().Field(i).IsExported() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	cf.Context = &name
	return &Flags{ConfigFlags: cf, RequestTimeout: f.RequestTimeout}
}

// Contexts are the names of the contexts the kubeconfig defines, sorted.
func (f *Flags) Contexts() ([]string, error) {
	raw, err := f.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return slices.Sorted(maps.Keys(raw.Contexts)), nil
}
