package fleettest

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/operand"
)

// The API objects of a fleet as big as real ones, for the benchmarks that
// read them from an API server: a GPU node carries a hundred-odd labels
// (Node Feature Discovery's, GPU Feature Discovery's, the cloud's), the list
// of its labels in an annotation, forty-odd images in its status and several
// addresses; an operand pod carries init containers that wait for the stack
// below it, a config-manager sidecar, a dozen env vars and host-path
// mounts, as the GPU Operator renders them. The shape follows the operator's
// assets and a real node's status; names and values are made up.

// Sizes of a dressed node and pod (docs/scale.md).
const (
	NFDLabels = 72 // feature.node.kubernetes.io/*
	GFDLabels = 24 // nvidia.com/gpu.*, nvidia.com/cuda.*, nvidia.com/mig.*
	Images    = 44 // status.images
)

// DressNode makes n look like GPU node number i of a cloud fleet: every
// label and annotation NFD and GFD would set (n's own labels win), node
// images, addresses and node info. KWOK keeps them; it sets the conditions.
func DressNode(n *corev1.Node, i int) {
	labels := map[string]string{}
	var nfd []string
	for k := range NFDLabels {
		key := "feature.node.kubernetes.io/" + nfdFeatures[k%len(nfdFeatures)]
		if k >= len(nfdFeatures) {
			key = fmt.Sprintf("feature.node.kubernetes.io/cpu-cpuid.X%02d", k)
		}
		labels[key] = "true"
		nfd = append(nfd, strings.TrimPrefix(key, "feature.node.kubernetes.io/"))
	}
	labels["feature.node.kubernetes.io/kernel-version.full"] = "6.8.0-1021-aws"
	labels["feature.node.kubernetes.io/system-os_release.ID"] = "ubuntu"
	labels["feature.node.kubernetes.io/system-os_release.VERSION_ID"] = "22.04"
	product := Pools[i%len(Pools)]
	gfd := map[string]string{
		operand.GPUProductLabel: product, operand.GPUCountLabel: "8", "nvidia.com/gpu.memory": "81559",
		"nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
		"nvidia.com/gpu.machine": "p5.48xlarge", "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none",
		"nvidia.com/gpu.mode": "compute", "nvidia.com/gpu.clique": fmt.Sprintf("clique-%d.%d", i/64, i%4),
		"nvidia.com/cuda.driver-version.full": "570.124.06", "nvidia.com/cuda.driver-version.major": "570",
		"nvidia.com/cuda.driver-version.minor": "124", "nvidia.com/cuda.driver-version.revision": "06",
		"nvidia.com/cuda.driver.major": "570", "nvidia.com/cuda.driver.minor": "124", "nvidia.com/cuda.driver.rev": "06",
		"nvidia.com/cuda.runtime-version.full": "12.8", "nvidia.com/cuda.runtime-version.major": "12",
		"nvidia.com/cuda.runtime-version.minor": "8", "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "single",
		"nvidia.com/gfd.timestamp": fmt.Sprint(1764547200 + i),
	}
	for k, v := range gfd {
		labels[k] = v
	}
	zone := "abc"[i%3 : i%3+1]
	for k, v := range map[string]string{
		"node.kubernetes.io/instance-type": "p5.48xlarge", "beta.kubernetes.io/instance-type": "p5.48xlarge",
		"topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": "us-east-1" + zone,
		"failure-domain.beta.kubernetes.io/region": "us-east-1", "failure-domain.beta.kubernetes.io/zone": "us-east-1" + zone,
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
		"topology.k8s.aws/zone-id": "use1-az" + zone, "topology.k8s.aws/network-node-layer-1": fmt.Sprintf("nn-%04x", i/256),
		"karpenter.sh/nodepool": "gpu", "karpenter.sh/capacity-type": "on-demand",
		"nvidia.com/gpu.deploy.sandbox-validator": "false", "nvidia.com/gpu.deploy.vgpu-manager": "false",
	} {
		labels[k] = v
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	n.Labels = labels
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations["nfd.node.kubernetes.io/feature-labels"] = strings.Join(nfd, ",")
	n.Annotations["nfd.node.kubernetes.io/extended-resources"] = ""
	n.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] = "true"
	n.Annotations["csi.volume.kubernetes.io/nodeid"] = fmt.Sprintf(`{"ebs.csi.aws.com":"i-%017x","efs.csi.aws.com":"i-%017x"}`, i, i)
	ip := fmt.Sprintf("10.%d.%d.%d", 16+i>>16, (i>>8)&255, i&255)
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: ip},
		{Type: corev1.NodeHostName, Address: n.Name},
		{Type: corev1.NodeInternalDNS, Address: "ip-" + strings.ReplaceAll(ip, ".", "-") + ".ec2.internal"},
	}
	n.Status.Images = nil
	for k := range Images {
		repo := imageRepos[k%len(imageRepos)]
		tag := fmt.Sprintf("v%d.%d.%d", 1+k/len(imageRepos), k%10, k%7)
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("%s@sha256:%064x", repo, k*7919+1), repo + ":" + tag},
			SizeBytes: int64(40_000_000 + k*13_000_000),
		})
	}
	// KWOK's node stage writes these unquoted into YAML: a letter first
	// keeps an all-digit hex string from reading as a number.
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: fmt.Sprintf("f%031x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("b%031x", i*31),
		KernelVersion: "6.8.0-1021-aws", OSImage: "Ubuntu 22.04.5 LTS", ContainerRuntimeVersion: "containerd://1.7.27",
		KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
	}
}

var nfdFeatures = []string{
	"cpu-cpuid.ADX", "cpu-cpuid.AESNI", "cpu-cpuid.AVX", "cpu-cpuid.AVX2", "cpu-cpuid.AVX512BW", "cpu-cpuid.AVX512CD",
	"cpu-cpuid.AVX512DQ", "cpu-cpuid.AVX512F", "cpu-cpuid.AVX512VL", "cpu-cpuid.AVX512VNNI", "cpu-cpuid.CMPXCHG8",
	"cpu-cpuid.FMA3", "cpu-cpuid.FXSR", "cpu-cpuid.GFNI", "cpu-cpuid.HYPERVISOR", "cpu-cpuid.MOVBE", "cpu-cpuid.OSXSAVE",
	"cpu-cpuid.SHA", "cpu-cpuid.SYSCALL", "cpu-cpuid.SYSEE", "cpu-cpuid.VAES", "cpu-cpuid.VPCLMULQDQ", "cpu-cpuid.X87",
	"cpu-cpuid.XSAVE", "cpu-hardware_multithreading", "cpu-model.family", "cpu-model.id", "cpu-model.vendor_id",
	"kernel-config.NO_HZ", "kernel-config.NO_HZ_IDLE", "kernel-version.major", "kernel-version.minor",
	"kernel-version.revision", "memory-numa", "pci-0300_1d0f.present", "pci-0302_10de.present", "pci-0302_10de.sriov.capable",
	"storage-nonrotationaldisk", "system-os_release.VERSION_ID.major", "system-os_release.VERSION_ID.minor",
	"network-sriov.capable", "rdma.available", "rdma.capable",
}

var imageRepos = []string{
	"nvcr.io/nvidia/driver", "nvcr.io/nvidia/k8s/container-toolkit", "nvcr.io/nvidia/k8s-device-plugin",
	"nvcr.io/nvidia/cloud-native/gpu-operator-validator", "nvcr.io/nvidia/k8s/dcgm-exporter", "nvcr.io/nvidia/cloud-native/dcgm",
	"nvcr.io/nvidia/cloud-native/k8s-mig-manager", "nvcr.io/nvidia/cloud-native/k8s-driver-manager",
	"registry.k8s.io/nfd/node-feature-discovery", "public.ecr.aws/eks/aws-ebs-csi-driver", "public.ecr.aws/eks-distro/kubernetes-csi/node-driver-registrar",
	"602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy",
	"docker.io/library/pytorch-training", "nvcr.io/nvidia/pytorch", "nvcr.io/nvidia/tritonserver",
}

// DressPodSpec gives an operand's pod template what the GPU Operator renders
// around its main container: an init container waiting for the stack below
// and a one-shot config manager, a config-manager sidecar, the env and the
// host-path volumes the operands mount. The first container stays first and
// keeps its resources, so scheduling is unchanged.
func DressPodSpec(spec *corev1.PodSpec, component string) {
	privileged := true
	htc := corev1.MountPropagationHostToContainer
	hostPaths := []struct{ name, path string }{
		{"run-nvidia", "/run/nvidia"}, {"run-nvidia-validations", "/run/nvidia/validations"},
		{"driver-install-dir", "/run/nvidia/driver"}, {"host-root", "/"}, {"host-dev", "/dev"},
		{"device-plugin", "/var/lib/kubelet/device-plugins"}, {"pod-resources", "/var/lib/kubelet/pod-resources"},
		{"cdi-root", "/var/run/cdi"}, {"sys", "/sys"}, {"host-os-release", "/etc/os-release"},
	}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	var mounts []corev1.VolumeMount
	for _, h := range hostPaths {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: h.name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: h.path, Type: &dirOrCreate},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: h.name, MountPath: "/host" + h.path, MountPropagation: &htc})
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: component + "-config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: component + "-config"}},
	}})
	mounts = append(mounts, corev1.VolumeMount{Name: component + "-config", MountPath: "/available-configs", ReadOnly: true})
	nodeName := corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}
	env := []corev1.EnvVar{nodeName,
		{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}, {Name: "NVIDIA_DRIVER_CAPABILITIES", Value: "all"},
		{Name: "DEVICE_LIST_STRATEGY", Value: "envvar"}, {Name: "DEVICE_ID_STRATEGY", Value: "uuid"},
		{Name: "FAIL_ON_INIT_ERROR", Value: "true"}, {Name: "CDI_ENABLED", Value: "true"},
		{Name: "NVIDIA_CTK_PATH", Value: "/usr/local/nvidia/toolkit/nvidia-ctk"}, {Name: "MPS_ROOT", Value: "/run/nvidia/mps"},
		{Name: "OPERATOR_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}
	configManager := func(name, oneshot string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.1", Command: []string{"config-manager"},
			Env: []corev1.EnvVar{nodeName, {Name: "ONESHOT", Value: oneshot}, {Name: "NODE_LABEL", Value: "nvidia.com/" + component + ".config"},
				{Name: "CONFIG_FILE_SRCDIR", Value: "/available-configs"}, {Name: "CONFIG_FILE_DST", Value: "/config/config.yaml"},
				{Name: "SEND_SIGNAL", Value: "true"}, {Name: "SIGNAL", Value: "1"}, {Name: "PROCESS_TO_SIGNAL", Value: component}},
			VolumeMounts:    mounts[len(mounts)-1:],
			SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
		}
	}
	spec.InitContainers = append(spec.InitContainers, corev1.Container{
		Name: "toolkit-validation", Image: "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.0",
		Command: []string{"sh", "-c"}, Args: []string{"until [ -f /run/nvidia/validations/toolkit-ready ]; do echo waiting for the container toolkit; sleep 5; done"},
		VolumeMounts:    mounts[1:2],
		SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
	}, configManager("config-manager-init", "true"))
	main := &spec.Containers[0]
	main.Env = append(main.Env, env...)
	main.VolumeMounts = append(main.VolumeMounts, mounts...)
	main.SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	spec.Containers = append(spec.Containers, configManager("config-manager", "false"))
	spec.PriorityClassName = "system-node-critical"
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}
