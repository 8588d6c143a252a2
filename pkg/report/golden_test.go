package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// Every view in every format, alone and across clusters, and the HTML page,
// rendered from one result recorded on a real install (test/realinstall's
// recordResult; GPUOPS_UPDATE_GOLDEN=1 there records it again, and here
// writes the goldens again): a change to what gpuops prints shows here as
// a diff a reviewer reads, a file a view and format.
func TestViewsGolden(t *testing.T) {
	r := gpuopstest.ReadResult(t, "testdata/results.json")
	gpuopstest.CheckRendered(t, "testdata/golden", gpuopstest.RenderViews(r, "stray-labels"))
}

// The recorded result reads back whole: what it is read into writes the
// same JSON again (a field the reader dropped would be missing).
func TestRecordedResultReadsWhole(t *testing.T) {
	b, err := os.ReadFile("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Result json.RawMessage }
	var want bytes.Buffer
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&want, file.Result); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(gpuopstest.ReadResult(t, "testdata/results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the recorded result reads back otherwise:\n%s\n%s", want.Bytes(), got)
	}
}
