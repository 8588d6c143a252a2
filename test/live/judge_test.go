package live_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/verdict"
)

type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	next http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// TestFirstVerdictIsTheOneShotVerdict starts the live judge in process
// on a settled fleet with a finding of each kind: its first verdict is what
// audit --explain, order-check --all-rules and matrix say from their LIST
// snapshot; and its informers took their initial lists as streaming
// watches (WatchList: no LIST request at all).
func TestFirstVerdictIsTheOneShotVerdict(t *testing.T) {
	f := newFleet(t)
	healthy := f.gpuNode(t, "ok")
	tainted := f.gpuNode(t, "tainted", testcluster.WithTaints(corev1.Taint{Key: "gpuops.test/broken", Effect: corev1.TaintEffectNoSchedule}))
	noToolkit := f.gpuNode(t, "no-toolkit")
	f.env.LabelNode(t, noToolkit, toolkit.LabelKey(), "false")
	f.env.WaitForPods(t, f.env.Namespace, func(pods []corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			if testcluster.PodRunningOn(&p, healthy) || testcluster.PodRunningOn(&p, noToolkit) {
				running++
			}
		}
		return running == 9 && len(pods) == 9
	})

	rec := &recorder{}
	cfg := rest.CopyConfig(f.env.RESTConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	selector := testcluster.LabelTestID + "=" + f.env.ID
	j, err := live.New(client, live.Options{Namespace: f.env.Namespace, NodeSelector: selector, AllRules: true, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan verdict.Batch, 1)
	j.Observe(live.Hooks{Judged: func(b verdict.Batch) {
		if b.Initial {
			first <- b
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- j.Run(ctx) }()
	b := <-first
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	s, err := read.Snapshot(context.Background(), f.env.Client, f.env.Namespace, read.Options{NodeSelector: selector, DaemonSets: true})
	if err != nil {
		t.Fatal(err)
	}
	rules := operand.RulesFor(operand.Lab, operand.AllRules)
	audits := judge.Audit(s, operand.Lab)
	why := explain.Explain(s, operand.Lab, audits, explain.Clock{})
	if len(b.Changes) != 3 {
		t.Fatalf("first batch: %d nodes, want 3", len(b.Changes))
	}
	for i, c := range b.Changes {
		v := c.After
		order, err := judge.Order(s, v.Node, operand.Lab, rules)
		if err != nil {
			t.Fatal(err)
		}
		missing := []explain.Missing{}
		for _, m := range why.Missing {
			if m.Node == v.Node {
				missing = append(missing, m)
			}
		}
		if !reflect.DeepEqual(v.Audit, audits[i]) || !reflect.DeepEqual(v.Order, order) ||
			!reflect.DeepEqual(v.Row, judge.BuildMatrix(s, operand.Lab).Rows[i]) || !reflect.DeepEqual(v.Explain.Missing, missing) {
			t.Errorf("live verdict of %s: %+v\none-shot: audit %+v, order %+v, reasons %+v", v.Node, v, audits[i], order, missing)
		}
	}
	if got := b.Changes[2].After; got.Node != tainted || len(got.Audit.Missing) != len(operand.Lab) {
		t.Errorf("the tainted node's verdict: %+v", got)
	}
	if got := b.Changes[0].After; got.Node != noToolkit || got.Order.String() != operand.DeviceRule.Finding {
		t.Errorf("the node without toolkit: %+v", got)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	streamed := map[string]bool{}
	for _, r := range rec.reqs {
		q := r.URL.Query()
		resource := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		if q.Get("watch") != "true" {
			t.Errorf("a LIST request: %s %s", r.Method, r.URL)
		}
		if q.Get("sendInitialEvents") == "true" {
			streamed[resource] = true
		}
	}
	if !reflect.DeepEqual(streamed, map[string]bool{"nodes": true, "pods": true, "daemonsets": true}) {
		t.Errorf("initial lists streamed: %v, want nodes, pods and daemonsets", streamed)
	}
}
