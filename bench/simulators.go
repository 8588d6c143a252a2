package main

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// A KWOK controller plays every kubelet of its fleet: it renews the nodes'
// leases, posts their status and moves their pods along. On this project's
// two cores the simulator of a kept 5,000-node realistic fleet took up to a
// core with nothing asked of its fleet (docs/scale.md, "Small objects too"),
// work a real fleet's kubelets do on their own machines: beside four kept
// fleets it was the load the judges were measured under, not any API
// server's. So with -pause-simulators every simulator of this repository's
// clusters is stopped (SIGSTOP) while a fleet's rounds run and resumed
// after, and the next fleet's rounds wait until the simulators have caught
// up with the heartbeats due meanwhile. The bench's clusters stretch their
// heartbeats 30 times (a lease of 20 minutes, the same grace period), so a
// fleet paused for one fleet's rounds stays Ready.
//
// The other fleets' control planes burn CPU too: after a serve run at
// 5,000 realistic nodes its API server used most of a core for a minute
// with its simulator stopped, while a lab-sized fleet's whole rounds take
// a fraction of a second. A real cluster's API server has no other
// cluster's beside it on the client's cores; so with -pause-others the
// fleets not being measured are stopped whole (etcd, API server,
// controller manager, scheduler), and resumed with the simulators. kwokctl
// runs the controller manager and the scheduler without leader election,
// so a stopped control plane has no lease to lose.

// controlPlane are the components of a kwokctl cluster besides its KWOK
// controller, as kwokctl names their pid files.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// procs are processes the bench stops and resumes: the KWOK controllers of
// the fleets a run measures, and with -pause-others the other fleets' control
// planes.
type procs []int

// findProcs reads the pids of the named components of the named clusters,
// from the pid files kwokctl keeps (as benchWatcher reads the API
// server's); flag names the flag that asked, for the error.
func findProcs(root, flag string, clusters, components []string) (procs, error) {
	var out procs
	for _, c := range clusters {
		for _, comp := range components {
			pid, err := readPID(pidFile(root, c, comp))
			if err != nil {
				return nil, fmt.Errorf("%s: the %s of cluster %s: %w", flag, comp, c, err)
			}
			out = append(out, pid)
		}
	}
	return out, nil
}

func (s procs) signal(sig syscall.Signal) error {
	for _, pid := range s {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("process %d: %v: %w", pid, sig, err)
		}
	}
	return nil
}

// pause stops the simulators; resume, which the caller defers, lets them
// go on.
func (s procs) pause() error  { return s.signal(syscall.SIGSTOP) }
func (s procs) resume() error { return s.signal(syscall.SIGCONT) }

// cpu is the CPU time the processes have used.
func (s procs) cpu() (time.Duration, error) {
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
func (s procs) waitQuiet(ctx context.Context, limit time.Duration) (time.Duration, bool, error) {
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

// pauseSimulators waits until the simulators of the clusters sims names
// are quiet (a fleet measured before may have resumed them moments ago),
// stops them and the control planes of the clusters stopped names, and
// returns the func that resumes them all and a note on it for the report.
func pauseSimulators(ctx context.Context, root string, sims, stopped []string) (resume func(), note string, err error) {
	sim, err := findProcs(root, "-pause-simulators", sims, []string{"kwok-controller"})
	if err != nil {
		return nil, "", err
	}
	planes, err := findProcs(root, "-pause-others", stopped, controlPlane)
	if err != nil {
		return nil, "", err
	}
	logf("waiting for the %d KWOK controllers to be quiet", len(sim))
	waited, quiet, err := sim.waitQuiet(ctx, catchUp)
	if err != nil {
		return nil, "", err
	}
	all := slices.Concat(sim, planes)
	if err := all.pause(); err != nil {
		all.resume()
		return nil, "", err
	}
	wait := fmt.Sprintf("after %.0f s waiting for them to use under %.0f%% of a core", waited.Seconds(), quietShare*100)
	if !quiet {
		wait = fmt.Sprintf("still busy after %.0f s of waiting", waited.Seconds())
	}
	note = fmt.Sprintf("the KWOK controllers of the %d fleets stopped during the rounds (`-pause-simulators`), %s", len(sim), wait)
	if len(stopped) > 0 {
		note += fmt.Sprintf("; the other %d fleets stopped whole meanwhile, their control planes too (`-pause-others`)", len(stopped))
	}
	return func() {
		if err := all.resume(); err != nil {
			logf("resuming the paused processes: %v (kill -CONT %v)", err, []int(all))
		}
	}, note, nil
}

// others are the clusters of the run but the one measured.
func others(all []string, measured string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == measured })
}
