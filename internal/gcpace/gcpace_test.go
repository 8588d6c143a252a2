package gcpace_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// gpuops's start allocates a few MB (client-go's scheme, the API types):
// at Go's own pace that came near a collection before main, threads and
// all, on every command (once it ran, once it did not, by a few hundred KB).
// At gpuops's pace it does not. A GOGC the user set wins: at GOGC=25 the
// start collects.
func TestStartDoesNotCollect(t *testing.T) {
	bin := gpuopstest.Binary(t)
	collects := regexp.MustCompile(`(?m)^gc \d+ @`)
	for _, c := range []struct {
		env  []string
		want bool
	}{
		{[]string{"GODEBUG=gctrace=1"}, false},
		{[]string{"GODEBUG=gctrace=1", "GOGC=25"}, true},
	} {
		res := gpuopstest.Run(t, c.env, bin, "--help")
		if got := collects.MatchString(res.Stderr); got != c.want {
			t.Errorf("%v: collected at the start: %v, want %v\n%s", c.env, got, c.want, res.Stderr)
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
