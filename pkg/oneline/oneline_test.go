package oneline

import (
	"errors"
	"testing"
)

func TestError(t *testing.T) {
	if got := Error(errors.New("list nodes:\n  forbidden:\tno\n")); got != "list nodes: forbidden: no" {
		t.Errorf("got %q", got)
	}
}
