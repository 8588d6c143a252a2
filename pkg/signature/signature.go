// Package signature is the catalog of known failure signatures: the line a
// GPU Operator component writes when the host, not the cluster, is at
// fault (nouveau loaded, a driver already loaded, no kernel headers for the
// running kernel, Secure Boot, SELinux, no fabric manager on an NVSwitch
// system, ...), each with the host-side cause and the remedy. Match takes
// plain text (a container's log, a termination message, an event's
// message) and names the signature it shows. It is pure: it reads no
// cluster.
//
// Each text is written as its component writes it, and each entry cites
// where: the component's source at a tag where it can be read, the issue
// threads where the text comes from a binary whose source is not public
// (nvidia-installer, modprobe, the CUDA runtime).
package signature

import (
	"slices"
	"strings"
)

// Signature is one known failure: what writes it, the exact texts that
// show it, why the host is at fault and what to do.
type Signature struct {
	// Code is stable, for scripts reading the JSON output.
	Code string
	// Component is what writes the text: the driver container, the driver
	// manager, the validator's CUDA workload, the device plugin, ...
	Component string
	// Texts are the exact texts the component writes, any of which shows
	// the signature. They are matched within a line, ignoring case: the
	// same message is capitalised differently from one release of a
	// component to the next (k8s-driver-manager's shell script and its Go
	// rewrite).
	Texts []string
	// Cause is the host-side cause; Remedy what to do on the host or in
	// the ClusterPolicy.
	Cause  string
	Remedy string
	// Sources say where each text is written: repo, tag and path, or the
	// issue threads that show it.
	Sources []string
	// Excuses: the text says the host provides what the component would,
	// so the wait it shows is not the node's fault (health weighs it; a
	// hint of any other entry never changes a verdict).
	Excuses bool
}

// Catalog codes, stable for scripts reading the JSON output.
const (
	FabricManagerNotRunning = "fabricmanager-not-running"
	NouveauLoaded           = "nouveau-loaded"
	DriverInUse             = "driver-in-use"
	KernelHeadersMissing    = "kernel-headers-missing"
	SecureBootUnsigned      = "secure-boot-unsigned-module"
	SELinuxDisabled         = "selinux-disabled"
	SELinuxDeniesModule     = "selinux-denies-module"
	DriverLibraryMismatch   = "driver-library-mismatch"
	NVMLNotFound            = "nvml-not-found"
	DriverPreinstalled      = "driver-preinstalled"
)

// Catalog is every known signature. Order matters only where one log
// could show two: the first of the catalog wins on the same line.
var Catalog = []Signature{
	{
		Code:      FabricManagerNotRunning,
		Component: "validator's CUDA workload (nvidia-cuda-validator, init container cuda-validation)",
		Texts:     []string{"system not yet initialized"},
		Cause: "the GPUs sit behind NVSwitches and nvidia-fabricmanager does not run on the host (or runs a " +
			"version other than the driver's): CUDA cannot initialise until the fabric is up",
		Remedy: "install nvidia-fabricmanager of the driver's exact version on the host and start it " +
			"(systemctl enable --now nvidia-fabricmanager); with the driver container, use a driver image " +
			"that ships it; then delete the nvidia-cuda-validator pod",
		Sources: []string{
			"NVIDIA/gpu-operator v26.7.0 docker/Dockerfile (cuda-validation runs NVIDIA/cuda-samples' vectorAdd, which prints the CUDA error)",
			"NVIDIA/gpu-operator#545", "NVIDIA/gpu-operator#375", "NVIDIA/gpu-operator#1043", "NVIDIA/gpu-operator#286",
		},
	},
	{
		Code:      NouveauLoaded,
		Component: "driver manager (k8s-driver-manager, the driver pod's init container)",
		Texts:     []string{"failed to unload nouveau driver"},
		Cause: "the host's nouveau module holds the GPUs and cannot be unloaded (a console or display " +
			"uses it), so the NVIDIA module cannot take them",
		Remedy: "blacklist nouveau on the host (blacklist nouveau and options nouveau modeset=0 in " +
			"/etc/modprobe.d/), rebuild the initramfs and reboot",
		Sources: []string{
			"NVIDIA/k8s-driver-manager v0.8.0 driver-manager (_unload_nouveau)",
			"NVIDIA/k8s-driver-manager v0.12.0 cmd/driver-manager/main.go",
			"NVIDIA/gpu-operator#15", "NVIDIA/k8s-driver-manager#37",
		},
	},
	{
		Code:      DriverInUse,
		Component: "driver container (nvidia-driver) or driver manager",
		Texts:     []string{"Could not unload NVIDIA driver kernel modules, driver is in use"},
		Cause: "an NVIDIA driver is already loaded on the host and in use: installed on the host itself, " +
			"or left by an earlier driver container with GPU processes still holding it",
		Remedy: "if the host has its own driver, tell the operator (driver.enabled=false, or label the node " +
			"nvidia.com/gpu.deploy.driver=pre-installed) or remove the host's driver and reboot; otherwise " +
			"stop the GPU workloads on the node (the driver manager's auto drain) and let the pod retry",
		Sources: []string{
			"NVIDIA/gpu-driver-container 25.01.21 ubuntu22.04/nvidia-driver, rhel9/nvidia-driver (_unload_driver)",
			"NVIDIA/k8s-driver-manager v0.8.0 driver-manager, v0.12.0 cmd/driver-manager/main.go",
			"NVIDIA/gpu-operator#126", "NVIDIA/nvidia-docker#1242",
		},
	},
	{
		Code:      KernelHeadersMissing,
		Component: "driver container (nvidia-driver)",
		Texts:     []string{"Could not resolve Linux kernel version"},
		Cause: "the distribution's package repositories have no kernel headers for the kernel the host " +
			"runs (a newer, custom or FIPS kernel), so the driver cannot be built for it",
		Remedy: "boot a kernel whose headers package the repositories carry, point the driver at a mirror " +
			"that has them (driver.repoConfig), or use a precompiled driver image for this kernel",
		Sources: []string{
			"NVIDIA/gpu-driver-container 25.01.21 ubuntu22.04/nvidia-driver, rhel9/nvidia-driver (_resolve_kernel_version)",
			"NVIDIA/gpu-operator#457", "NVIDIA/gpu-operator#85", "NVIDIA/gpu-operator#205", "NVIDIA/gpu-operator#526",
		},
	},
	{
		Code:      SecureBootUnsigned,
		Component: "driver container (nvidia-installer, modprobe)",
		Texts: []string{
			"was not signed by a key that is trusted by the kernel",
			"Loading of unsigned module is rejected",
			"Key was rejected by service",
		},
		Cause: "UEFI Secure Boot is on and the kernel refuses the module the driver container built, " +
			"which no key the host trusts has signed",
		Remedy: "use a driver whose modules are signed by a key the host trusts (a signed precompiled " +
			"driver, or sign and enrol your own key with the host's MOK), or turn Secure Boot off",
		Sources: []string{
			"NVIDIA/gpu-operator#266", "NVIDIA/gpu-operator#1726", "NVIDIA/gpu-operator#1142", "NVIDIA/gpu-operator#497",
		},
	},
	{
		Code:      SELinuxDisabled,
		Component: "driver container (nvidia-driver on RHEL)",
		Texts:     []string{"chcon: can't apply partial context to unlabeled file"},
		Cause: "SELinux is disabled on the host, yet the RHEL driver container relabels the device files " +
			"it creates and aborts when it cannot",
		Remedy: "set SELinux to permissive or enforcing on the host (the operator supports no host with " +
			"SELinux disabled here) and reboot",
		Sources: []string{
			"NVIDIA/gpu-driver-container 25.01.21 rhel9/nvidia-driver (chcon -R -t container_file_t)",
			"NVIDIA/gpu-operator#452", "NVIDIA/gpu-operator#1489",
		},
	},
	{
		Code:      SELinuxDeniesModule,
		Component: "driver container (modprobe)",
		Texts:     []string{"could not insert 'nvidia': Permission denied"},
		Cause:     "SELinux enforcing on the host denies the driver container loading the NVIDIA kernel module",
		Remedy: "allow the module load in the host's SELinux policy (or set SELinux permissive), " +
			"then let the driver pod retry",
		Sources: []string{"NVIDIA/gpu-operator#553"},
	},
	{
		Code:      DriverLibraryMismatch,
		Component: "NVML (nvidia-container-cli, nvidia-smi, the device plugin)",
		Texts:     []string{"Driver/library version mismatch"},
		Cause: "the NVIDIA kernel module loaded on the host is of another version than its user-space " +
			"libraries: the driver was upgraded without unloading the old module",
		Remedy: "reboot the node (or unload the NVIDIA modules and load them again) so the module matches " +
			"the libraries",
		Sources: []string{"NVIDIA/gpu-operator#898"},
	},
	{
		Code:      NVMLNotFound,
		Component: "device plugin (nvidia-device-plugin)",
		Texts:     []string{"If this is a GPU node, did you set the docker default runtime to `nvidia`?"},
		Cause: "the device plugin's container started without the NVIDIA runtime, so NVML is not in it: " +
			"the container runtime is not configured for NVIDIA (its config rewritten, not restarted since, " +
			"or the nvidia runtime class missing)",
		Remedy: "check that the container toolkit configured the host's runtime (containerd or CRI-O has " +
			"an nvidia handler) and restarted it, then delete the device plugin pod",
		Sources: []string{"NVIDIA/k8s-device-plugin v0.20.0 internal/plugin/factory.go (getResourceManagers)"},
	},
	{
		// Not a fault: the host's driver serves the node, and the driver
		// pod only waits (v0.4.0 sleeps in the init container) or exits
		// until the node's deploy label drops it (v0.4.1 on label the
		// node pre-installed). health clears the driver pod's wait on
		// this line (Excuses); the text is the prefix every release
		// writes.
		Code:      DriverPreinstalled,
		Component: "driver manager (k8s-driver-manager, the driver pod's init container)",
		Texts:     []string{"NVIDIA GPU driver is already pre-installed on the node"},
		Cause: "a driver is installed on the host and serves the GPUs (the driver manager found nvidia-smi " +
			"under /host): the containerized driver is not needed there, and its pod only waits",
		Remedy: "label the node nvidia.com/gpu.deploy.driver=pre-installed (or false), or set driver.enabled=false " +
			"where every node has its driver, so the operator renders no driver pod for it",
		Sources: []string{
			"NVIDIA/k8s-driver-manager v0.4.0 driver-manager (uninstall_driver: \"..., will not proceed with the containerized driver installation\", then sleep inf)",
			"NVIDIA/k8s-driver-manager v0.8.1 driver-manager (uninstall_driver: \"..., disabling the containerized driver on the node\", labels the node pre-installed, exit 1)",
			"NVIDIA/k8s-driver-manager v0.12.0 cmd/driver-manager/main.go (uninstallDriver)",
			"NVIDIA/gpu-operator#381",
		},
		Excuses: true,
	},
}

// Codes are every catalog code, in catalog order: what the docs list.
func Codes() []string {
	out := make([]string, len(Catalog))
	for i, s := range Catalog {
		out[i] = s.Code
	}
	return out
}

// Of is the catalog's entry of a code; false if there is none.
func Of(code string) (Signature, bool) {
	i := slices.IndexFunc(Catalog, func(s Signature) bool { return s.Code == code })
	if i < 0 {
		return Signature{}, false
	}
	return Catalog[i], true
}

// Found is a signature found in a text, and the line that shows it.
type Found struct {
	Signature
	Line string
}

// lowered are the catalog's texts in lower case, for each entry.
var lowered = func() [][]string {
	out := make([][]string, len(Catalog))
	for i, s := range Catalog {
		for _, t := range s.Texts {
			out[i] = append(out[i], strings.ToLower(t))
		}
	}
	return out
}()

// Match finds the signature a text shows: the last line (a log's newest)
// that holds a catalog text, and the first entry of the catalog it holds.
// False when no line holds one.
func Match(text string) (Found, bool) {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if code, ok := matchLine(strings.ToLower(lines[i])); ok {
			return Found{Signature: Catalog[code], Line: strings.TrimSpace(lines[i])}, true
		}
	}
	return Found{}, false
}

// matchLine is the index of the first catalog entry whose text the
// lower-cased line holds.
func matchLine(line string) (int, bool) {
	for i, texts := range lowered {
		for _, t := range texts {
			if strings.Contains(line, t) {
				return i, true
			}
		}
	}
	return 0, false
}

// Hint is a signature found in a failing container's log: what the node's
// verdict adds to its root cause, the host's fault by name.
type Hint struct {
	Code      string `json:"code"`
	Component string `json:"component"`
	// From says what showed the line: FromLog (health --logs), the
	// kubelet's FromMessage (a container's termination message) or
	// FromEvent (a Warning Event on the pod).
	From      string `json:"from"`
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"` // empty for an Event
	// Previous: the log read was the instance's before (a container waiting
	// to restart), as kubectl logs --previous.
	Previous bool   `json:"previous,omitempty"`
	Line     string `json:"line"` // the line that shows it
	Cause    string `json:"cause"`
	Remedy   string `json:"remedy"`
}

// What a hint's line was read in.
const (
	FromLog     = "log"
	FromMessage = "termination-message"
	FromEvent   = "event"
)

// Hint is the hint of a signature found in what a pod's container (or,
// for an Event, the pod) showed.
func (f Found) Hint(from, pod, container string, previous bool) Hint {
	return Hint{Code: f.Code, Component: f.Component, From: from, Pod: pod, Container: container, Previous: previous,
		Line: f.Line, Cause: f.Cause, Remedy: f.Remedy}
}
