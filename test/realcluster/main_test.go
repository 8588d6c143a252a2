// Package realcluster_test runs gpuops the way a user does on clusters that
// are not the lab: a real GPU Operator install's DaemonSets, a read-only
// judge with least privilege, and hostile input. Each test uses its own
// namespace and nodes and selects its nodes with -l; the tests use the
// operator's fixed deploy-label keys, so they do not run in parallel.
package realcluster_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// selector narrows the judges to this test's nodes.
func selector(env *testcluster.Env) string { return testcluster.LabelTestID + "=" + env.ID }

// create creates every object of a multi-document YAML in env's namespace
// (cluster-scoped ones cluster-wide) and deletes the cluster-scoped ones
// when the test ends; the namespace takes the others with it.
func create(t *testing.T, env *testcluster.Env, docs []byte) {
	t.Helper()
	ctx := context.Background()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(docs), 4096)
	for {
		var raw runtime.RawExtension
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		ns := env.Namespace
		switch o := obj.(type) {
		case *appsv1.DaemonSet:
			_, err = env.Client.AppsV1().DaemonSets(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = env.Client.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = env.Client.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = env.Client.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		case *rbacv1.ClusterRoleBinding:
			_, err = env.Client.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		default:
			t.Fatalf("create: unexpected %T", obj)
		}
		if err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
}

// kustomize builds a directory of the embedded kustomize/ tree (what the
// binary ships) through an overlay with the given extra kustomization lines.
func kustomize(t *testing.T, dir, overlay string) []byte {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(gpuops.Kustomize, "kustomize", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(gpuops.Kustomize, p)
		if err != nil {
			return err
		}
		return mem.WriteFile("/"+p, data)
	})
	if err != nil {
		t.Fatal(err)
	}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + overlay + "\nresources:\n- ../" + dir + "\n"
	if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(kust)); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/overlay")
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	y, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// operands renders the lab's five DaemonSets into env's namespace.
func operands(t *testing.T, env *testcluster.Env) []byte {
	t.Helper()
	ms, err := render.Operands(gpuops.Kustomize, operand.Lab, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, m := range ms {
		all = append(append(all, m.YAML...), "---\n"...)
	}
	return all
}
