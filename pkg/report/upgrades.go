package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/upgrade"
)

// Upgrades prints the driver rollout: in text its counts by verdict, the
// budget of each policy (the ClusterPolicy's, or each NVIDIADriver's) and
// who uses it, then a line per node that is not done:
// "<node> <verdict> <state> since …: <cause>"; a table has every node.
// JSON and YAML are the rollout whole.
func (p Printer) Upgrades(w io.Writer, r *upgrade.Rollout) error {
	if p.Format.Data() {
		r.Nodes = nonNil(r.Nodes)
		return p.data(w, r)
	}
	if p.Format == Table {
		t := table{header: []string{"NODE", "VERDICT", "STATE", "SINCE", "CAUSE"}}
		for _, n := range r.Nodes {
			since := ""
			if n.Since != nil {
				since = n.Since.UTC().Format("2006-01-02T15:04:05Z")
			}
			v := cell{n.Verdict, green}
			if n.Verdict != upgrade.Done {
				v.color = red
			}
			t.rows = append(t.rows, []cell{{text: n.Node}, v, {text: n.State}, {text: since}, {text: n.Cause}})
		}
		return p.table(w, t)
	}
	var b strings.Builder
	counts := make([]string, 0, len(r.Counts))
	for _, v := range slices.Sorted(maps.Keys(r.Counts)) {
		counts = append(counts, fmt.Sprintf("%s=%d", v, r.Counts[v]))
	}
	fmt.Fprintf(&b, "rollout: %d nodes %s\n", len(r.Nodes), strings.Join(counts, " "))
	if r.Policy != nil {
		writeBudget(&b, "ClusterPolicy", r.Budget)
	}
	for _, pl := range r.Pools {
		writeBudget(&b, "NVIDIADriver "+pl.Name, pl.Budget)
	}
	for _, n := range r.Nodes {
		if n.Verdict == upgrade.Done {
			continue
		}
		line := strings.TrimSpace(n.Node + " " + n.Verdict + " " + n.State)
		if n.Since != nil {
			line += " since " + n.Since.UTC().Format("2006-01-02T15:04:05Z")
		}
		if n.Cause != "" {
			line += ": " + n.Cause
		}
		b.WriteString(line + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeBudget(b *strings.Builder, of string, bu upgrade.Budget) {
	parallel := fmt.Sprint(bu.MaxParallel)
	if bu.MaxParallel == 0 {
		parallel = "unlimited"
	}
	fmt.Fprintf(b, "budget (%s): maxParallelUpgrades %s, maxUnavailable %d of %d nodes, %d free", of, parallel, bu.MaxUnavailable, bu.Nodes, bu.Available)
	if len(bu.InProgress) > 0 {
		fmt.Fprintf(b, "; upgrading: %s", strings.Join(bu.InProgress, ","))
	}
	if len(bu.Unavailable) > 0 {
		fmt.Fprintf(b, "; unavailable: %s", strings.Join(bu.Unavailable, ","))
	}
	b.WriteByte('\n')
}
