package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/promtext"
)

// DefaultAddress is where gpuops serve listens: 9402 is free in Prometheus'
// default port allocations and clear of the GPU Operator's own exporters
// (DCGM exporter 9400, node-status exporter 8000).
const DefaultAddress = ":9402"

// Handler sets up the exporter of t (call it before t runs) and serves
// /metrics (the verdicts, the other collectors' metrics — the quarantine's,
// with the families it writes as text when it is a promtext.Writer — and
// the process' Go and OS metrics), /healthz (the process answers) and
// /readyz (503 until every node is judged a first time, then 200).
func Handler(t *live.Tracker, others ...prometheus.Collector) http.Handler {
	e := New(t.Synced)
	t.Observe(live.Hooks{Judged: e.Judged, WatchFailed: e.WatchFailed, Workloads: e.Workloads})
	reg := prometheus.NewRegistry()
	reg.MustRegister(e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(others...)
	writers := []promtext.Writer{e}
	for _, c := range others {
		if w, ok := c.(promtext.Writer); ok {
			writers = append(writers, w)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promtext.Handler(reg, writers...))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !t.Ready() {
			http.Error(w, "not synced yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// Serve runs the tracker and serves its Handler on ln until ctx ends; then it
// stops both and returns nil. Call it once the tracker's other hooks are set.
func Serve(ctx context.Context, ln net.Listener, t *live.Tracker, others ...prometheus.Collector) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	srv := &http.Server{Handler: Handler(t, others...), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	judged := make(chan error, 1)
	go func() { judged <- t.Run(ctx) }()
	var err error
	select {
	case err = <-served: // the listener failed
		stop()
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	<-judged
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
