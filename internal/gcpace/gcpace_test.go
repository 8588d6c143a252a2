package gcpace_test

import (
	"regexp"
	"testing"

	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// gpuops's start allocates a few MB (client-go's scheme, the API types):
// at Go's own pace that collects once before main, threads and all, on
// every command. At gpuops's pace, set before those packages start, it
// does not. The run at GOGC=100 shows the collection is there to be spared.
func TestStartDoesNotCollect(t *testing.T) {
	bin := gpuopstest.Binary(t)
	collects := regexp.MustCompile(`(?m)^gc \d+ @`)
	for _, c := range []struct {
		env  []string
		want bool
	}{
		{[]string{"GODEBUG=gctrace=1"}, false},
		{[]string{"GODEBUG=gctrace=1", "GOGC=100"}, true}, // a GOGC the user set wins
	} {
		res := gpuopstest.Run(t, c.env, bin, "--help")
		if got := collects.MatchString(res.Stderr); got != c.want {
			t.Errorf("%v: collected at the start: %v, want %v\n%s", c.env, got, c.want, res.Stderr)
		}
	}
}
