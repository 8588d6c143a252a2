// Command gpuops provisions a GPU Operator lab declaratively and judges any
// cluster's operand DaemonSets. See README.md for a tour.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

func main() {
	// client-go reports its retries (a broken watch, a refused connection)
	// through klog on stderr; gpuops says what matters in its own lines.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
