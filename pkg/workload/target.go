package workload

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Target is what gpuops why is asked about: a pod, or a workload whose
// pods are found through their owners.
type Target struct {
	Kind string // Pod, Job, Deployment or StatefulSet
	Name string
}

// kinds are the target kinds by the names kubectl accepts for them.
var kinds = map[string]string{
	"pod": "Pod", "pods": "Pod", "po": "Pod",
	"job": "Job", "jobs": "Job",
	"deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
	"statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
}

// ParseTarget reads POD, pod/NAME, job/NAME, deployment/NAME or
// statefulset/NAME (kubectl's short names too).
func ParseTarget(s string) (Target, error) {
	kind, name, typed := strings.Cut(s, "/")
	if !typed {
		kind, name = "pod", s
	}
	k, ok := kinds[strings.ToLower(kind)]
	if !ok {
		return Target{}, fmt.Errorf("%q: want POD, pod/NAME, job/NAME, deployment/NAME or statefulset/NAME", s)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return Target{}, fmt.Errorf("%q: invalid name: %s", s, strings.Join(errs, "; "))
	}
	return Target{Kind: k, Name: name}, nil
}

// String is the target as kubectl names it: kind/name.
func (t Target) String() string { return strings.ToLower(t.Kind) + "/" + t.Name }

// Owns reports whether the pod named name, whose controller is owner
// (kind/name; empty for a bare pod), belongs to the target, given the
// ReplicaSets each Deployment controls (by Deployment name).
func (t Target) Owns(name, owner string, replicaSets map[string][]string) bool {
	switch t.Kind {
	case "Pod":
		return name == t.Name
	case "Job", "StatefulSet":
		return owner == t.Kind+"/"+t.Name
	case "Deployment":
		for _, rs := range replicaSets[t.Name] {
			if owner == "ReplicaSet/"+rs {
				return true
			}
		}
	}
	return false
}

// WhyReport is what gpuops why answers of one target.
type WhyReport struct {
	Target    string   `json:"target"`
	Namespace string   `json:"namespace"`
	Answers   []Answer `json:"pods"` // its GPU pods
	// Others are its pods that are no GPU pods: asking no GPU, or ended.
	Others []snapshot.NonGPUPod `json:"others,omitempty"`
	Notes  []string             `json:"notes,omitempty"`
}

// Findings counts the answers that are findings.
func (r *WhyReport) Findings() int { return findings(r.Answers) }

func findings(as []Answer) int {
	n := 0
	for i := range as {
		if as[i].Finding() {
			n++
		}
	}
	return n
}

// PodsReport is what gpuops pods answers: every GPU pod not running as
// asked, grouped by cause (Sort).
type PodsReport struct {
	Pods  []Answer `json:"pods"`
	Notes []string `json:"notes,omitempty"`
	// Running are the GPU pods listed that run as asked (namespace/name):
	// the checks -o junit and -o openreports pass.
	Running []string `json:"-"`
	// Taken is when the cluster was read (the results' time).
	Taken time.Time `json:"-"`
}

// PodsOf is gpuops pods' answer, and serve --workloads': why each GPU pod of
// listed (of f's, listed by another read; f itself when nil) is not
// running as asked, judged against every GPU pod of f and the cluster, and
// each pod listed the kubelet refused; sorted, without notes.
func PodsOf(f, listed *snapshot.GPUPods, c Cluster) *PodsReport {
	pods := f.Pods // every pod of f is listed: no copy (serve judges them all twice a second)
	if listed == nil {
		listed = f
	} else {
		keys := make(map[string]bool, len(listed.Pods))
		for _, p := range listed.Pods {
			keys[p.Key()] = true
		}
		pods = make([]snapshot.GPUPod, 0, len(listed.Pods))
		for _, p := range f.Pods {
			if keys[p.Key()] {
				pods = append(pods, p)
			}
		}
	}
	r := &PodsReport{Taken: c.Now}
	for _, a := range Why(f, pods, c) {
		if a.State != Running {
			r.Pods = append(r.Pods, a)
		} else {
			r.Running = append(r.Running, a.Pod)
		}
	}
	for _, rj := range listed.Rejected {
		r.Pods = append(r.Pods, WhyRejected(f, rj))
	}
	r.Sort()
	return r
}

// Sort orders the pods by their code's place in Codes, then by name.
func (r *PodsReport) Sort() {
	slices.SortFunc(r.Pods, func(a, b Answer) int {
		return cmp.Or(cmp.Compare(precedence(a.Code), precedence(b.Code)), cmp.Compare(a.Pod, b.Pod))
	})
}

// Findings counts the pods that are findings.
func (r *PodsReport) Findings() int { return findings(r.Pods) }
