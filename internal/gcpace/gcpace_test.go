package gcpace_test

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuops/gpuops/internal/gcpace"
	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// gpuops's start allocates a few MB (client-go's scheme, the API types):
// at Go's own pace that came near a collection before main, threads and
// all, on every command (once it ran, once it did not, by a few hundred KB).
// At gpuops's pace the start's one collection is its own, forced, which
// frees the block of huge pages (none where the kernel refused them). A
// GOGC the user set wins: at GOGC=25 the start collects by the heap's goal.
func TestStartCollectsOnlyToFreeTheHugePages(t *testing.T) {
	bin := gpuopstest.Binary(t)
	cycle := regexp.MustCompile(`(?m)^gc \d+ @.*$`)
	for _, c := range []struct {
		env     []string
		byGoal  bool // a collection not forced
		atMost1 bool
	}{
		{[]string{"GODEBUG=gctrace=1"}, false, true},
		{[]string{"GODEBUG=gctrace=1", "GOGC=25"}, true, false},
	} {
		res := gpuopstest.Run(t, c.env, bin, "--help")
		cycles := cycle.FindAllString(res.Stderr, -1)
		byGoal := slices.ContainsFunc(cycles, func(l string) bool { return !strings.HasSuffix(l, "(forced)") })
		if byGoal != c.byGoal || c.atMost1 && len(cycles) > 1 {
			t.Errorf("%v: collections at the start (by the heap's goal: %v, want %v; at most one: %v)\n%s", c.env, byGoal, c.byGoal, c.atMost1, res.Stderr)
		}
	}
}

// The pace is set before the package that allocates most at the start, as
// the init trace shows (init order is fixed by the import graph and paths).
func TestPaceSetBeforeTheScheme(t *testing.T) {
	res := gpuopstest.Run(t, []string{"GODEBUG=inittrace=1"}, gpuopstest.Binary(t), "--help")
	pace := strings.Index(res.Stderr, "init github.com/gpuops/gpuops/internal/gcpace ")
	scheme := strings.Index(res.Stderr, "init k8s.io/client-go/kubernetes/scheme ")
	if pace < 0 || scheme < 0 || pace > scheme {
		t.Errorf("in the init trace gcpace's init is at %d, client-go's scheme's at %d: want both, gcpace first", pace, scheme)
	}
}

// A one-shot command does not collect until its heap reaches
// FirstCollection, then collects at 4x the live heap, without the limit; one
// that asked for Go's own pace keeps it past the first collection. Each case
// runs in a fresh test process whose environment sets no pace, so that this
// package's init is the one measured.
func TestFirstCollectionThenPace(t *testing.T) {
	for _, c := range []struct {
		name, steady string
		want         []string
	}{
		{"one-shot", "", []string{fmt.Sprintf("before: GOGC -1, limit %d, 0 collections; after: GOGC 400, limit %d\n", gcpace.FirstCollection, math.MaxInt64)}},
		// At Go's own pace the garbage is collected as it comes; the first
		// collection's switch leaves the pace alone.
		{"steady", "1", []string{fmt.Sprintf("before: GOGC 100, limit %d, ", math.MaxInt64), fmt.Sprintf("after: GOGC 100, limit %d\n", math.MaxInt64)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := gpuopstest.Run(t, []string{"GOGC=", "GOMEMLIMIT=", "GCPACE_PROBE=1", "GCPACE_STEADY=" + c.steady},
				os.Args[0], "-test.run=^TestPaceProbe$", "-test.v")
			for _, want := range c.want {
				if !strings.Contains(res.Stdout, want) {
					t.Errorf("want %q in the probe's output:\n%s%s", want, res.Stdout, res.Stderr)
				}
			}
		})
	}
}

// TestPaceProbe is TestFirstCollectionThenPace's fresh process: once the
// start's collection is over, it makes half of FirstCollection in garbage,
// collects, and prints the pace before (and the collections since the
// start's) and after.
func TestPaceProbe(t *testing.T) {
	if os.Getenv("GCPACE_PROBE") == "" {
		return // a probe only when TestFirstCollectionThenPace runs it
	}
	<-gcpace.Armed // the start's own collection is over
	if os.Getenv("GCPACE_STEADY") != "" {
		gcpace.Steady()
	}
	start := pace().cycles
	var sink []byte
	for range gcpace.FirstCollection / 2 >> 20 {
		sink = make([]byte, 1<<20)
	}
	runtime.KeepAlive(sink)
	before := pace()
	runtime.GC()
	// The switch is a cleanup, run on its own goroutine after the
	// collection: wait a second for the pace to change (not the cycles,
	// which changed with the collection itself).
	after := pace()
	for deadline := time.Now().Add(time.Second); after.gogc == before.gogc && after.limit == before.limit && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		after = pace()
	}
	fmt.Printf("before: %s, %d collections; after: %s\n", before, before.cycles-start, after)
}

type gcState struct {
	gogc, limit int64
	cycles      uint64
}

func (s gcState) String() string { return fmt.Sprintf("GOGC %d, limit %d", s.gogc, s.limit) }

// pace reads the collector's pace and cycles from runtime/metrics.
func pace() gcState {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return gcState{gogc: int64(s[0].Value.Uint64()), limit: int64(s[1].Value.Uint64()), cycles: s[2].Value.Uint64()}
}
