package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// contender is one way of reading the cluster that the bench times.
type contender struct {
	name  string
	argv  []string
	codes []int                   // exit codes that mean "ran fine" (1 is a finding for the judges)
	floor bool                    // the baseline of the ratios
	want  string                  // the exact output expected of it; empty: not checked
	check func(out []byte) string // when set, checks the output instead of want: "as expected …" or "**WRONG** …"
	slow  bool                    // a script: its rounds may be capped (-script-rounds)
	// against names the contender whose median its ratio is over: its own
	// floor (the LISTs it makes), or the live judge of a --from; empty:
	// the run's floor.
	against string
	// baseline is another build's judge (-baseline): one that fails is
	// reported as failed, without ending the run.
	baseline bool
}

// sample is one timed run.
type sample struct {
	wall   time.Duration
	maxRSS int64         // bytes: the largest process of the run's process tree
	cpu    time.Duration // user and system CPU of the run's process tree
	stdout []byte
}

// runOnce runs argv with env and measures wall time and peak RSS. The RSS
// comes from /usr/bin/time, not from this process's wait4: a child forked
// from a Go process inherits the parent's high-water mark across exec, and
// the bench's own heap is large. For a script, time reports the largest
// process of its tree (kubectl or jq). The CPU is the tree's user and
// system time, as time reports it (10 ms steps).
func runOnce(ctx context.Context, c contender, env []string, tmp string) (sample, error) {
	rssFile := filepath.Join(tmp, "maxrss")
	argv := append([]string{"/usr/bin/time", "-f", "%M %U %S", "-o", rssFile}, c.argv...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		return sample{}, fmt.Errorf("%s: %w", c.name, err)
	}
	if code := cmd.ProcessState.ExitCode(); !slices.Contains(c.codes, code) {
		return sample{}, fmt.Errorf("%s: exit %d: %s", c.name, code, lastLine(stderr.Bytes()))
	}
	out, err := os.ReadFile(rssFile)
	if err != nil {
		return sample{}, fmt.Errorf("%s: peak RSS: %w", c.name, err)
	}
	f := strings.Fields(lastLine(out)) // after "Command exited with non-zero status N"
	if len(f) != 3 {
		return sample{}, fmt.Errorf("%s: peak RSS and CPU: %q", c.name, lastLine(out))
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return sample{}, fmt.Errorf("%s: peak RSS: %w", c.name, err)
	}
	var cpu time.Duration
	for _, s := range f[1:] {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return sample{}, fmt.Errorf("%s: CPU: %w", c.name, err)
		}
		cpu += time.Duration(secs * float64(time.Second))
	}
	return sample{wall: wall, maxRSS: kb << 10, cpu: cpu, stdout: stdout.Bytes()}, nil
}

// result sums up the rounds of one contender.
type result struct {
	contender
	walls []time.Duration
	cpus  []time.Duration
	rss   []int64
	out   []byte // stdout of the warm-up run
	// failed is why a baseline's run failed (a request timed out, say):
	// it runs no more, and the others' rounds are kept.
	failed error
}

func (r result) median() time.Duration {
	w := slices.Clone(r.walls)
	slices.Sort(w)
	if len(w)%2 == 1 {
		return w[len(w)/2]
	}
	return (w[len(w)/2-1] + w[len(w)/2]) / 2
}

// medianCPU is the rounds' median CPU time (the upper one of an even count).
func (r result) medianCPU() time.Duration { return median(r.cpus) }

func (r result) peakRSS() int64 { return slices.Max(r.rss) }

// measure runs every contender once to warm up (caches, page cache, the
// apiserver's watch cache), then rounds more times, interleaved so that any
// drift of the machine hits all of them alike, each round in its own
// shuffled order (the same in every run of the bench): in a fixed order
// each contender always ran right after the same one, and after the JSON
// read, whose garbage the API server collects while the next contender
// runs, that was always the audit. A slow contender runs only
// slowRounds timed rounds, with no warm-up, when slowRounds is below rounds:
// at 5,000 real-sized nodes the kubectl+jq recipe takes minutes a run, and
// its first run is checked instead.
func measure(ctx context.Context, cs []contender, env []string, tmp string, rounds, slowRounds int, progress func(string)) ([]result, error) {
	results := make([]result, len(cs))
	for i, c := range cs {
		results[i].contender = c
	}
	capped := slowRounds < rounds
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	shuffle := rand.New(rand.NewPCG(1, 2))
	for round := 0; round <= rounds; round++ {
		if round > 0 {
			shuffle.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for _, i := range order {
			c := cs[i]
			if c.slow && capped && (round == 0 || round > slowRounds) {
				continue
			}
			if results[i].failed != nil {
				continue
			}
			s, err := runOnce(ctx, c, env, tmp)
			if err != nil && c.baseline && ctx.Err() == nil {
				results[i].failed = fmt.Errorf("round %d: %w", round, err)
				continue
			}
			if err != nil {
				return nil, err
			}
			if round == 0 {
				results[i].out = s.stdout
				continue
			}
			if results[i].out == nil {
				results[i].out = s.stdout
			}
			results[i].walls = append(results[i].walls, s.wall)
			results[i].cpus = append(results[i].cpus, s.cpu)
			results[i].rss = append(results[i].rss, s.maxRSS)
		}
		if round > 0 {
			progress(fmt.Sprintf("round %d/%d done", round, rounds))
		}
	}
	return results, nil
}

func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return string(lines[len(lines)-1])
}
