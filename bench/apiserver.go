package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// An API server that has just built a fleet holds what the build churned
// through, at 5,000 realistic nodes many times what it serves, and with several
// fleets kept a small machine drops the gpuops binary's pages between runs and
// reads them back in (docs/scale.md). Restarted, the same server, its etcd
// untouched, holds what it serves, as a cluster's API server that has run for a
// while does. So with -restart-apiserver each kept fleet's API server is
// restarted before its rounds: the same binary, flags, environment, working
// directory and log, as kwokctl started it, its pid file updated for the
// bench's other readers (findProcs, benchWatcher).

// restartAPIServer restarts the kube-apiserver of a kept cluster and waits
// until it is ready; it says how long that took.
func restartAPIServer(ctx context.Context, root, cluster, kubeconfig string) (time.Duration, error) {
	pidPath := pidFile(root, cluster, "kube-apiserver")
	pid, err := readPID(pidPath)
	if err != nil {
		return 0, fmt.Errorf("-restart-apiserver: %w", err)
	}
	proc := fmt.Sprintf("/proc/%d/", pid)
	args, err1 := nulSeparated(proc + "cmdline")
	env, err2 := nulSeparated(proc + "environ")
	dir, err3 := os.Readlink(proc + "cwd")
	logPath, err4 := os.Readlink(proc + "fd/2")
	if err := errors.Join(err1, err2, err3, err4); err != nil || len(args) == 0 {
		return 0, fmt.Errorf("-restart-apiserver: the API server of %s (pid %d): %v", cluster, pid, err)
	}
	logf("restarting the API server of %s (pid %d)", cluster, pid)
	// Killed, not terminated: on SIGTERM it waits a minute for its
	// watchers to go, and it keeps nothing etcd does not.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("-restart-apiserver: stop pid %d: %w", pid, err)
	}
	for deadline := time.Now().Add(time.Minute); alive(pid); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("-restart-apiserver: pid %d still running a minute after SIGKILL", pid)
		}
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("-restart-apiserver: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives the bench, as kwokctl's did
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("-restart-apiserver: %w", err)
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return 0, fmt.Errorf("-restart-apiserver: %w", err)
	}
	restarted := cmd.Process.Pid
	_ = cmd.Process.Release()
	start := time.Now()
	for {
		if !alive(restarted) {
			return 0, fmt.Errorf("-restart-apiserver: the API server of %s exited after its restart (log: %s)", cluster, logPath)
		}
		out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").Output()
		if err == nil && strings.TrimSpace(string(out)) == "ok" {
			logf("the API server of %s ready again in %.1f s", cluster, time.Since(start).Seconds())
			return time.Since(start), nil
		}
		if time.Since(start) > 10*time.Minute {
			return 0, fmt.Errorf("-restart-apiserver: the API server of %s not ready 10 minutes after its restart (log: %s)", cluster, logPath)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// alive reports whether a thread of a process still runs. A killed
// process's leader shows as a zombie while its other threads are still
// exiting, and the last of them holds its files, its listening port among
// them: a server started on the same port meanwhile fails to bind.
func alive(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, t := range tasks {
		state, err := statFields(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue // gone meanwhile
		}
		if len(state) > 0 && state[0] != "Z" && state[0] != "X" {
			return true
		}
	}
	return false
}

// nulSeparated reads a /proc file of NUL-terminated strings.
func nulSeparated(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}
