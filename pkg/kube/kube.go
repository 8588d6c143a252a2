// Package kube turns kubectl-style connection flags into API clients, and API
// errors into the one-line messages gpuops prints.
package kube

import (
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DefaultNamespace is where the GPU Operator and its operands live.
const DefaultNamespace = "gpu-operator"

// Flags are the connection flags every command takes, as kubectl spells them.
type Flags struct {
	Kubeconfig string
	Context    string
	Namespace  string
	Timeout    time.Duration // per API request
}

// Clients are the API handles a command works with.
type Clients struct {
	Config    *rest.Config         // JSON, for clients of any type (dynamic, apply)
	Kube      kubernetes.Interface // protobuf, for the built-in types
	Namespace string
}

// Connect loads the kubeconfig (the flag, else $KUBECONFIG, else ~/.kube/config)
// the way kubectl does, and builds the clients. It makes no API call.
func Connect(f Flags) (*Clients, error) {
	cf := genericclioptions.NewConfigFlags(false)
	cf.KubeConfig, cf.Context = &f.Kubeconfig, &f.Context
	if err := checkNotEmpty(cf); err != nil {
		return nil, err
	}
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if f.Timeout > 0 {
		cfg.Timeout = f.Timeout
	}
	// gpuops makes few, large requests; lift client-side throttling.
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(protobuf(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns := f.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	return &Clients{Config: cfg, Kube: cs, Namespace: ns}, nil
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

// checkNotEmpty refuses a kubeconfig that names no cluster (an empty file, a
// $KUBECONFIG that points nowhere, no ~/.kube/config), where client-go
// would quietly fall back to http://localhost:8080 and the user would read
// "connection refused" about a server they never chose. Inside a pod the
// in-cluster config still applies.
func checkNotEmpty(cf *genericclioptions.ConfigFlags) error {
	loader := cf.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if len(raw.Clusters) == 0 && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return fmt.Errorf("kubeconfig: no cluster configured in %s", strings.Join(loader.ConfigAccess().GetLoadingPrecedence(), ", "))
	}
	return nil
}
