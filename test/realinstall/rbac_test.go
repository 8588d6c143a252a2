package realinstall_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// checkLeastPrivilege judges the install as a user that has the shipped
// judge roles (kustomize/rbac/judge) and nothing else, with the driver
// switched off in the policy: no MISSING. Without the nvidia.com rule the
// policy cannot be read: a note says so, and the driver reads as missing.
func (in *install) checkLeastPrivilege(t *testing.T) {
	t.Helper()
	var clusterRole rbacv1.ClusterRole
	var role rbacv1.Role
	for file, into := range map[string]any{"clusterrole.yaml": &clusterRole, "role.yaml": &role} {
		data, err := fs.ReadFile(gpuops.Kustomize, "kustomize/rbac/judge/"+file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	full := in.nodes["full"]
	withoutPolicy := clusterRole.DeepCopy()
	withoutPolicy.Rules = slices.DeleteFunc(withoutPolicy.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.APIGroups, "nvidia.com") })
	if len(withoutPolicy.Rules) == len(clusterRole.Rules) {
		t.Fatal("the judge's ClusterRole has no nvidia.com rule")
	}

	judge := in.userKubeconfig(t, "judge", &clusterRole, &role)
	a := in.auditJSONWith(t, judge, 1)
	if !slices.ContainsFunc(a.Nodes, func(n auditNode) bool { return n.Node == full && len(n.Missing) == 0 }) ||
		!slices.ContainsFunc(a.Disabled, func(d disabled) bool { return d.Operand == "driver" }) || len(a.Notes) != 1 {
		t.Errorf("as the judge: %+v, want %s OK, the driver disabled, one note (the roster's)", a, full)
	}

	blind := in.userKubeconfig(t, "blind", withoutPolicy, &role)
	a = in.auditJSONWith(t, blind, 1)
	if !slices.ContainsFunc(a.Nodes, func(n auditNode) bool { return n.Node == full && slices.Equal(n.Missing, []string{"driver"}) }) ||
		!slices.ContainsFunc(a.Notes, func(n string) bool {
			return n == "ClusterPolicy not read (operands it switches off read as missing): the user may not list clusterpolicies.nvidia.com"
		}) {
		t.Errorf("without the nvidia.com rule: %+v, want %s missing the driver and a note that the policy was not read", a, full)
	}
}

// userKubeconfig writes a kubeconfig that acts as a user of its own with the
// given roles (renamed for this test), bound in the test's namespace.
func (in *install) userKubeconfig(t *testing.T, name string, cr *rbacv1.ClusterRole, r *rbacv1.Role) string {
	t.Helper()
	ctx := context.Background()
	user := "gpuops-" + name + "-" + in.env.ID
	c := in.env.Client.RbacV1()
	cr, r = cr.DeepCopy(), r.DeepCopy()
	cr.Name, r.Name = user, user
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	if _, err := c.ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}
	if _, err := c.ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range []error{
			c.ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{}),
			c.ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})
	if _, err := c.Roles(in.env.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}
	if _, err := c.RoleBindings(in.env.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(in.env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].Impersonate = user
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// auditJSONWith runs audit -o json on the install's nodes with another
// kubeconfig.
func (in *install) auditJSONWith(t *testing.T, kubeconfig string, code int) auditJSON {
	t.Helper()
	r := gpuopstest.Cluster{Kubeconfig: kubeconfig, Namespace: in.env.Namespace}.Run(t, "audit", "-o", "json", "-l", in.selector())
	return decodeAudit(t, r, code)
}
