package read

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestWorkloadTrimKeepsWhatConversionReads proves, over random pods,
// claims and device classes, that converting the trimmed decode gives what
// converting the whole object gives.
func TestWorkloadTrimKeepsWhatConversionReads(t *testing.T) {
	gpus := 0
	for seed := range int64(300) {
		f := filler(seed)
		var pod corev1.Pod
		f.Fill(&pod)
		if seed%2 == 0 && len(pod.Spec.Containers) > 0 { // make sure a GPU pod is among them
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), "cpu": resource.MustParse("1")}
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/3 nodes are available"})
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RunContainerError", Message: "error running hook #0"}}})
		}
		var got corev1.Pod
		decodeTrimmed(t, &pod, &got, workloadPodFields, nil)
		want, wantOK := snapshot.GPUPodFrom(&pod)
		have, haveOK := snapshot.GPUPodFrom(&got)
		if wantOK {
			gpus++
		}
		if wantOK != haveOK || !semantic.DeepEqual(want, have) {
			t.Fatalf("seed %d: pod from trimmed bytes\n got %v %+v\nwant %v %+v", seed, haveOK, have, wantOK, want)
		}
		pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, snapshot.UnexpectedAdmissionError
		got = corev1.Pod{}
		decodeTrimmed(t, &pod, &got, rejectedFields, nil)
		if w, h := must(snapshot.RejectedPodFrom(&pod)), must(snapshot.RejectedPodFrom(&got)); w != h {
			t.Fatalf("seed %d: rejected pod from trimmed bytes\n got %+v\nwant %+v", seed, h, w)
		}

		// Their configs hold raw objects the filler cannot make.
		var claim, gotClaim resourcev1.ResourceClaim
		f.Fill(&claim.ObjectMeta)
		f.Fill(&claim.Spec.Devices.Requests)
		if seed%3 != 0 {
			claim.Status.Allocation = &resourcev1.AllocationResult{}
			f.Fill(&claim.Status.Allocation.Devices.Results)
			claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
				resourcev1.DeviceRequestAllocationResult{Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-0"})
		}
		decodeTrimmed(t, &claim, &gotClaim, claimFields, nil)
		if w, h := snapshot.ClaimFrom(&claim), snapshot.ClaimFrom(&gotClaim); !semantic.DeepEqual(w, h) {
			t.Fatalf("seed %d: claim from trimmed bytes\n got %+v\nwant %+v", seed, h, w)
		}
		var class, gotClass resourcev1.DeviceClass
		f.Fill(&class.ObjectMeta)
		f.Fill(&class.Spec.Selectors)
		if seed%2 == 0 {
			class.Spec.Selectors = append(class.Spec.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'gpu.nvidia.com'"}})
		}
		decodeTrimmed(t, &class, &gotClass, classFields, nil)
		if class.Name != gotClass.Name || snapshot.GPUClass(&class) != snapshot.GPUClass(&gotClass) {
			t.Fatalf("seed %d: class %s from trimmed bytes is %s, GPU %v", seed, class.Name, gotClass.Name, snapshot.GPUClass(&gotClass))
		}
	}
	if gpus < 100 {
		t.Fatalf("only %d of the random pods were GPU pods: the test proves little", gpus)
	}
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("not converted")
	}
	return v
}
