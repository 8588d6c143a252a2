package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/quarantine"
)

// Quarantine prints gpuops quarantine status: the fuse, then one line per
// node gpuops's quarantine holds, "<node> <cause> since <time>".
func (p Printer) Quarantine(w io.Writer, st quarantine.State) error {
	if p.Format.Data() {
		return p.data(w, st)
	}
	var b strings.Builder
	if st.Fuse.Tripped {
		fmt.Fprintf(&b, "fuse: TRIPPED since %s: %s (gpuops quarantine reset, once looked at)\n", st.Fuse.Since.UTC().Format(time.RFC3339), st.Fuse.Reason)
	} else {
		b.WriteString("fuse: ok\n")
	}
	fmt.Fprintf(&b, "quarantined: %d\n", len(st.Nodes))
	for _, n := range st.Nodes {
		fmt.Fprintf(&b, "%s %s since %s\n", n.Node, n.Cause, n.Since.UTC().Format(time.RFC3339))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
