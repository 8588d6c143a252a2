// Command kube is kube-apiserver, kube-controller-manager and kube-scheduler
// in one binary: the name it is run as (hack/build-tools.sh makes links of
// those names) or else its first argument (kube kube-scheduler --version)
// picks the command, built by the constructor the upstream command's main
// calls. One binary is one link instead of three, with the packages the
// three share linked once (docs/scale.md, "Building the control plane").
package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	_ "time/tzdata" // CronJob time zones, as kube-apiserver and kube-controller-manager have it

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go's metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var commands = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := commands[name]; !ok && len(os.Args) > 1 {
		// kube NAME ARGS...: run as NAME, as a link of that name would.
		name, os.Args = os.Args[1], os.Args[1:]
	}
	newCommand, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "kube: run as one of %s (a link of that name, or that name as the first argument)\n",
			strings.Join(slices.Sorted(maps.Keys(commands)), ", "))
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}
