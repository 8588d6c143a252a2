package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (the format of `go doc cmd/test2json`).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64 // seconds, on pass, fail and skip
	Output  string
}

// Package is the timing of one test package.
type Package struct {
	Name     string
	Result   string  // pass, fail, skip, or "" when the run ended without one
	Elapsed  float64 // seconds the test binary ran, as go test reports it
	Tests    int     // top-level tests that ended
	Cluster  float64 // seconds testcluster took to start the package's cluster; 0 if none
	Clusters int     // clusters started (a package may start more than one)
}

// Test is the timing of one test or subtest.
type Test struct {
	Package string
	Name    string
	Result  string
	Elapsed float64
}

// Run is what a `go test -json` stream says about time.
type Run struct {
	Packages []Package // slowest first
	Tests    []Test    // slowest first
	Wall     float64   // seconds from the first event to the last
}

// clusterStart is the line internal/testcluster prints when it has started a
// package's cluster.
var clusterStart = regexp.MustCompile(`testcluster: started cluster \S+ in ([0-9.]+)s`)

// Parse reads a `go test -json` stream. Lines that are not JSON (build
// output, a script's own lines) are skipped.
func Parse(r io.Reader) (*Run, error) {
	pkgs := map[string]*Package{}
	pkg := func(name string) *Package {
		p := pkgs[name]
		if p == nil {
			p = &Package{Name: name}
			pkgs[name] = p
		}
		return p
	}
	var tests []Test
	var first, last time.Time
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		line := s.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Package == "" {
			continue
		}
		if !e.Time.IsZero() {
			if first.IsZero() || e.Time.Before(first) {
				first = e.Time
			}
			if e.Time.After(last) {
				last = e.Time
			}
		}
		p := pkg(e.Package)
		switch e.Action {
		case "output":
			if m := clusterStart.FindStringSubmatch(e.Output); m != nil {
				secs, _ := strconv.ParseFloat(m[1], 64)
				p.Cluster += secs
				p.Clusters++
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				p.Result, p.Elapsed = e.Action, e.Elapsed
				continue
			}
			tests = append(tests, Test{Package: e.Package, Name: e.Test, Result: e.Action, Elapsed: e.Elapsed})
			if !strings.Contains(e.Test, "/") {
				p.Tests++
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	run := &Run{Tests: tests}
	if !first.IsZero() {
		run.Wall = last.Sub(first).Seconds()
	}
	for _, p := range pkgs {
		run.Packages = append(run.Packages, *p)
	}
	sort.SliceStable(run.Packages, func(i, j int) bool {
		a, b := run.Packages[i], run.Packages[j]
		if a.Elapsed != b.Elapsed {
			return a.Elapsed > b.Elapsed
		}
		return a.Name < b.Name
	})
	sort.SliceStable(run.Tests, func(i, j int) bool {
		a, b := run.Tests[i], run.Tests[j]
		if a.Elapsed != b.Elapsed {
			return a.Elapsed > b.Elapsed
		}
		return a.Package+" "+a.Name < b.Package+" "+b.Name
	})
	return run, nil
}

// Print writes the run as two Markdown tables: every package, and the top
// slowest tests (subtests too when subtests is set); top <= 0 prints all.
func (r *Run) Print(w io.Writer, module string, top int, subtests bool) {
	short := func(p string) string {
		if p == module {
			return "."
		}
		return strings.TrimPrefix(p, module+"/")
	}
	var sum float64
	for _, p := range r.Packages {
		sum += p.Elapsed
	}
	fmt.Fprintf(w, "%d packages; %.1f s from the first event to the last; %.1f s summed over packages (they run in parallel)\n\n",
		len(r.Packages), r.Wall, sum)
	fmt.Fprintln(w, "| package | result | wall | tests | cluster start |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|")
	for _, p := range r.Packages {
		res := p.Result
		if res == "" {
			res = "no result"
		}
		cluster := "—"
		if p.Clusters == 1 {
			cluster = fmt.Sprintf("%.1f s", p.Cluster)
		} else if p.Clusters > 1 {
			cluster = fmt.Sprintf("%.1f s (%d clusters)", p.Cluster, p.Clusters)
		}
		fmt.Fprintf(w, "| %s | %s | %.1f s | %d | %s |\n", short(p.Name), res, p.Elapsed, p.Tests, cluster)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| test | package | result | wall |")
	fmt.Fprintln(w, "|---|---|---|---:|")
	n := 0
	for _, t := range r.Tests {
		if !subtests && strings.Contains(t.Name, "/") {
			continue
		}
		if top > 0 && n == top {
			break
		}
		n++
		fmt.Fprintf(w, "| %s | %s | %s | %.1f s |\n", t.Name, short(t.Package), t.Result, t.Elapsed)
	}
}
