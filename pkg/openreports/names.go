package openreports

import (
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Name is the name of the report of a cluster ("" for the one gpuops runs
// against) and a node ("" for the whole cluster): gpuops, gpuops-<node>,
// gpuops-<cluster>-<hash>, gpuops-<cluster>-<hash>-<node>. A kubeconfig
// context may hold any character ("arn:aws:eks:...:cluster/gpu"): it is
// lowercased and every character but a letter or a digit becomes "-", and the
// hash of the name as it is keeps two contexts that read alike apart. A name
// past the 253 characters an object name may have is cut and ends in the
// hash of the whole.
func Name(cluster, node string) string {
	parts := []string{"gpuops"}
	if cluster != "" {
		parts = append(parts, clusterPart(cluster))
	}
	if node != "" {
		parts = append(parts, node)
	}
	name := strings.Join(parts, "-")
	if len(name) > validation.DNS1123SubdomainMaxLength {
		h := "-" + hash(name)
		name = strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-len(h)], "-.") + h
	}
	return name
}

// clusterPart is a cluster's name in a form both a name and a label value
// can hold: at most 40 characters of it, then its hash.
func clusterPart(cluster string) string {
	b := []byte(strings.ToLower(cluster))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	s := string(b)
	if len(s) > 40 {
		s = s[:40]
	}
	s = strings.Trim(s, "-")
	if s == "" {
		return hash(cluster)
	}
	return s + "-" + hash(cluster)
}

func hash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}
