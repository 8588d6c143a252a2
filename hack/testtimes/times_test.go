package main

import (
	"bytes"
	"strings"
	"testing"
)

// A `go test -json` stream of two packages (the second starts a cluster and
// runs a parallel test with a subtest), with a build line and a script's own
// line mixed in.
const stream = `build-tools: up to date (0.3 s)
{"Time":"2026-12-02T04:00:00Z","Action":"start","Package":"github.com/gpuops/gpuops/pkg/a"}
{"Time":"2026-12-02T04:00:00.1Z","Action":"run","Package":"github.com/gpuops/gpuops/pkg/a","Test":"TestFast"}
{"Time":"2026-12-02T04:00:00.2Z","Action":"pass","Package":"github.com/gpuops/gpuops/pkg/a","Test":"TestFast","Elapsed":0.1}
{"Time":"2026-12-02T04:00:00.3Z","Action":"pass","Package":"github.com/gpuops/gpuops/pkg/a","Elapsed":0.3}
{"Time":"2026-12-02T04:00:00Z","Action":"start","Package":"github.com/gpuops/gpuops/test/b"}
{"Time":"2026-12-02T04:00:09Z","Action":"output","Package":"github.com/gpuops/gpuops/test/b","Test":"TestSlow","Output":"testcluster: started cluster gpuops-t-abc in 8.5s (log x)\n"}
{"Time":"2026-12-02T04:00:20Z","Action":"pass","Package":"github.com/gpuops/gpuops/test/b","Test":"TestSlow/sub","Elapsed":4}
{"Time":"2026-12-02T04:00:20Z","Action":"pass","Package":"github.com/gpuops/gpuops/test/b","Test":"TestSlow","Elapsed":11}
{"Time":"2026-12-02T04:00:21Z","Action":"fail","Package":"github.com/gpuops/gpuops/test/b","Test":"TestMid","Elapsed":2.5}
{"Time":"2026-12-02T04:00:30Z","Action":"fail","Package":"github.com/gpuops/gpuops/test/b","Elapsed":30.2}
not json
`

func TestParse(t *testing.T) {
	run, err := Parse(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if run.Wall != 30 {
		t.Errorf("wall %v, want 30", run.Wall)
	}
	if len(run.Packages) != 2 {
		t.Fatalf("packages %+v, want 2", run.Packages)
	}
	b, a := run.Packages[0], run.Packages[1]
	if b.Name != "github.com/gpuops/gpuops/test/b" || b.Result != "fail" || b.Elapsed != 30.2 || b.Tests != 2 || b.Cluster != 8.5 || b.Clusters != 1 {
		t.Errorf("slowest package %+v", b)
	}
	if a.Name != "github.com/gpuops/gpuops/pkg/a" || a.Result != "pass" || a.Tests != 1 || a.Clusters != 0 {
		t.Errorf("other package %+v", a)
	}
	var names []string
	for _, tt := range run.Tests {
		names = append(names, tt.Name)
	}
	if got, want := strings.Join(names, " "), "TestSlow TestSlow/sub TestMid TestFast"; got != want {
		t.Errorf("tests slowest first: %q, want %q", got, want)
	}
}

func TestPrint(t *testing.T) {
	run, err := Parse(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	run.Print(&out, "github.com/gpuops/gpuops", 2, false)
	want := `2 packages; 30.0 s from the first event to the last; 30.5 s summed over packages (they run in parallel)

| package | result | wall | tests | cluster start |
|---|---|---:|---:|---:|
| test/b | fail | 30.2 s | 2 | 8.5 s |
| pkg/a | pass | 0.3 s | 1 | — |

| test | package | result | wall |
|---|---|---|---:|
| TestSlow | test/b | pass | 11.0 s |
| TestMid | test/b | fail | 2.5 s |
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
