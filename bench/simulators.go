package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// A KWOK controller plays every kubelet of its fleet: it renews the nodes'
// leases, posts their status and moves their pods along. On this project's
// two cores the simulator of a kept 5,000-node realistic fleet took 40-110%
// of a core with nothing asked of its fleet (2026-12-03, bench/RESULTS.md),
// work a real fleet's kubelets do on their own machines: beside four kept
// fleets it was the load the judges were measured under, not any API
// server's. So with -pause-simulators every simulator of this repository's
// clusters is stopped (SIGSTOP) while a fleet's rounds run and resumed
// after, and the next fleet's rounds wait until the simulators have caught
// up with the heartbeats due meanwhile. The control planes (etcd, the API
// servers, controller managers and schedulers) run throughout. The bench's
// clusters stretch their heartbeats 30 times (a lease of 20 minutes, the
// same grace period), so a fleet paused for one fleet's rounds stays Ready.

// simulators are the KWOK controllers of the fleets a run measures.
type simulators []int

// findSimulators reads the KWOK controllers' pids of the named clusters,
// from the pid files kwokctl keeps (as benchWatcher reads the API server's).
func findSimulators(root string, clusters []string) (simulators, error) {
	var out simulators
	for _, c := range clusters {
		pid, err := readPID(pidFile(root, c, "kwok-controller"))
		if err != nil {
			return nil, fmt.Errorf("-pause-simulators: the KWOK controller of cluster %s: %w", c, err)
		}
		out = append(out, pid)
	}
	return out, nil
}

func (s simulators) signal(sig syscall.Signal) error {
	for _, pid := range s {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("KWOK controller %d: %v: %w", pid, sig, err)
		}
	}
	return nil
}

// pause stops the simulators; resume, which the caller defers, lets them
// go on.
func (s simulators) pause() error  { return s.signal(syscall.SIGSTOP) }
func (s simulators) resume() error { return s.signal(syscall.SIGCONT) }

// cpu is the CPU time the simulators have used.
func (s simulators) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, pid := range s {
		t, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// quietShare is the simulators' CPU, as a share of one core over a window
// of quietWindow, under which they have caught up: the kept fleets' idle
// simulators took 5-40% of a core together, more while heartbeats they
// missed were due.
const (
	quietShare  = 0.5
	quietWindow = 5 * time.Second
)

// waitQuiet waits, after a resume, until the simulators' CPU over a window
// is under quietShare of a core, or limit has passed; it returns how long
// it waited and whether they were quiet by then.
func (s simulators) waitQuiet(ctx context.Context, limit time.Duration) (time.Duration, bool, error) {
	start := time.Now()
	for time.Since(start) < limit {
		before, err := s.cpu()
		if err != nil {
			return 0, false, err
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(quietWindow):
		}
		after, err := s.cpu()
		if err != nil {
			return 0, false, err
		}
		if float64(after-before) < quietShare*float64(quietWindow) {
			return time.Since(start), true, nil
		}
	}
	return time.Since(start), false, nil
}

// catchUp bounds the wait for the simulators to catch up before a fleet's
// rounds.
const catchUp = 5 * time.Minute

// pauseSimulators waits until the named clusters' simulators are quiet (a
// fleet measured before may have resumed them moments ago), stops them, and
// returns the func that resumes them and a note on the wait for the
// report.
func pauseSimulators(ctx context.Context, root string, clusters []string) (resume func(), note string, err error) {
	sims, err := findSimulators(root, clusters)
	if err != nil {
		return nil, "", err
	}
	logf("waiting for the %d KWOK controllers to be quiet", len(sims))
	waited, quiet, err := sims.waitQuiet(ctx, catchUp)
	if err != nil {
		return nil, "", err
	}
	if err := sims.pause(); err != nil {
		sims.resume()
		return nil, "", err
	}
	wait := fmt.Sprintf("after %.0f s waiting for them to use under %.0f%% of a core", waited.Seconds(), quietShare*100)
	if !quiet {
		wait = fmt.Sprintf("still busy after %.0f s of waiting", waited.Seconds())
	}
	note = fmt.Sprintf("the KWOK controllers of the %d fleets stopped during the rounds (`-pause-simulators`), %s", len(sims), wait)
	return func() {
		if err := sims.resume(); err != nil {
			logf("resuming the KWOK controllers: %v (kill -CONT %v)", err, []int(sims))
		}
	}, note, nil
}
