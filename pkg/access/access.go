// Package access checks, before a command changes anything, that the
// caller may do everything it will need, so that a command run with too few
// rights stops at once with one line that says what is missing, rather than
// half-way through its changes.
package access

import (
	"context"
	"fmt"
	"strings"
	"sync"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Need is a set of verbs on one resource, cluster-wide or in one namespace.
type Need struct {
	Verbs     []string
	Group     string // API group; "" for the core group
	Resource  string
	Namespace string // "" for a cluster-scoped resource
}

// String reads like RBAC: "get,patch nodes", "create daemonsets.apps in
// namespace gpu-operator".
func (n Need) String() string {
	s := strings.Join(n.Verbs, ",") + " " + n.Resource
	if n.Group != "" {
		s += "." + n.Group
	}
	if n.Namespace != "" {
		s += " in namespace " + n.Namespace
	}
	return s
}

// Provision is what up needs: read the namespace, label nodes, apply
// DaemonSets (a server-side apply that creates an object needs create as
// well as patch), and watch nodes, pods and DaemonSets until they settle.
func Provision(namespace string) []Need {
	return []Need{
		{Verbs: []string{"get"}, Resource: "namespaces"},
		{Verbs: []string{"get", "list", "watch", "patch"}, Resource: "nodes"},
		{Verbs: []string{"get", "list", "watch", "create", "patch"}, Group: "apps", Resource: "daemonsets", Namespace: namespace},
		{Verbs: []string{"list", "watch"}, Resource: "pods", Namespace: namespace},
	}
}

// Relabel is what optout and optin need: label a node, then watch the
// DaemonSet react.
func Relabel(namespace string) []Need {
	return []Need{
		{Verbs: []string{"get", "list", "watch", "patch"}, Resource: "nodes"},
		{Verbs: []string{"get", "list", "watch"}, Group: "apps", Resource: "daemonsets", Namespace: namespace},
		{Verbs: []string{"list", "watch"}, Resource: "pods", Namespace: namespace},
	}
}

// Reset is what reset always needs: find and unlabel gpuops' nodes, delete
// its DaemonSets and watch their pods go. Deleting the namespace, which it
// does only when gpuops created it, is left to the call itself.
func Reset(namespace string) []Need {
	return []Need{
		{Verbs: []string{"get"}, Resource: "namespaces"},
		{Verbs: []string{"list", "patch"}, Resource: "nodes"},
		{Verbs: []string{"list", "delete"}, Group: "apps", Resource: "daemonsets", Namespace: namespace},
		{Verbs: []string{"list", "watch"}, Resource: "pods", Namespace: namespace},
	}
}

// ForbiddenError lists what the caller may not do, each with only the verbs
// it lacks.
type ForbiddenError struct{ Missing []Need }

func (e *ForbiddenError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, n := range e.Missing {
		parts[i] = n.String()
	}
	return "forbidden: needs " + strings.Join(parts, "; ")
}

// Check asks the API server (SelfSubjectAccessReview, which every
// authenticated user may create) whether the caller may do each verb of
// each need, all questions at once. It returns a *ForbiddenError naming
// every verb denied. A server that refuses the review itself says nothing
// about the rights: Check then returns nil and the commands' own calls
// report what they are refused.
func Check(ctx context.Context, c authclient.SelfSubjectAccessReviewsGetter, needs []Need) error {
	allowed := make([][]bool, len(needs))
	errs := make([][]error, len(needs))
	var wg sync.WaitGroup
	for i, n := range needs {
		allowed[i], errs[i] = make([]bool, len(n.Verbs)), make([]error, len(n.Verbs))
		for j, verb := range n.Verbs {
			wg.Go(func() { // each writes only its own cell
				review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authv1.ResourceAttributes{Verb: verb, Group: n.Group, Resource: n.Resource, Namespace: n.Namespace},
				}}
				res, err := c.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
				if errs[i][j] = err; err == nil {
					allowed[i][j] = res.Status.Allowed
				}
			})
		}
	}
	wg.Wait()
	var missing []Need
	for i, n := range needs {
		m := Need{Group: n.Group, Resource: n.Resource, Namespace: n.Namespace}
		for j, v := range n.Verbs {
			switch err := errs[i][j]; {
			case apierrors.IsForbidden(err):
				return nil
			case err != nil:
				return fmt.Errorf("check permissions: %w", err)
			case !allowed[i][j]:
				m.Verbs = append(m.Verbs, v)
			}
		}
		if len(m.Verbs) > 0 {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return &ForbiddenError{Missing: missing}
	}
	return nil
}
