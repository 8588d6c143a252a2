package words

import (
	"errors"
	"testing"
)

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 nodes", 1: "1 node", 2: "2 nodes", 5000: "5000 nodes"} {
		if got := Count(n, "node"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestErrorLine(t *testing.T) {
	if got := ErrorLine(errors.New("list nodes:\n  forbidden:\tno\n")); got != "list nodes: forbidden: no" {
		t.Errorf("got %q", got)
	}
}
