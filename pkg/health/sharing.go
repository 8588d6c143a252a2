package health

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Cause codes of how a node offers its GPUs against what it was asked to
// offer: the device plugin's sharing config and the MIG manager's layout
// (snapshot.Offers).
const (
	// The node's device plugin config label (or the policy's default)
	// names a config its ConfigMap lacks.
	SharingConfigUnknown = "sharing-config-unknown"
	// The config shares the GPUs (replicas), the node advertises another
	// count: typically the physical one, the config not applied.
	SharingNotApplied = "sharing-not-applied"
	// The config shares by MPS and the MPS control daemon is not running
	// and ready on the node.
	MPSDaemonNotReady = "mps-daemon-not-ready"
	// The node's MIG config label names a layout the MIG manager's
	// ConfigMap lacks.
	MIGConfigUnknown = "mig-config-unknown"
	// The MIG manager failed to apply the layout (state failed).
	MIGFailed = "mig-failed"
	// The MIG manager has been applying a layout (pending, rebooting)
	// longer than allowed.
	MIGStuck = "mig-stuck"
	// The MIG devices advertised are not the layout's under the MIG
	// strategy.
	MIGLayoutMismatch = "mig-layout-mismatch"
)

// offers judges, on a node whose device plugin is asked for, what it
// advertises against its sharing config and MIG layout. A finding replaces
// the device plugin's own failure only where it says why (a config the
// ConfigMap lacks makes the config manager fail); it leaves a pause, a
// missing pod and the chain's other findings be. The MIG manager's state
// is judged while it pauses the device plugin too.
func (c chain) offers(links []link, n snapshot.Node, pods []*snapshot.Pod, now time.Time, stuckAfter time.Duration) {
	dp := c.index(operand.DevicePlugin)
	if dp < 0 || !links[dp].asked && links[dp].pause == nil {
		return
	}
	mig := dp
	if i := c.index(operand.MIGManager); i >= 0 && links[i].asked && links[i].pause == nil && links[i].code == "" {
		mig = i
	}
	plugin := links[dp].pause == nil && links[dp].code != Missing && links[dp].code != Order
	if plugin && c.sharing(&links[dp], n, pods, now) {
		return
	}
	if !c.migState(links, mig, n, now, stuckAfter) && plugin {
		c.migLayout(&links[mig], n, links[dp].code == "")
	}
}

// sharing judges the device plugin's config; true when it found something.
func (c chain) sharing(l *link, n snapshot.Node, pods []*snapshot.Pod, now time.Time) bool {
	if c.offered == nil || c.offered.Sharing == nil {
		return false
	}
	sc := c.offered.Sharing
	cfg, key, from, ok := sharingConfig(n, sc)
	if key == "" {
		return false // the config manager falls back to an empty config: no sharing
	}
	if !ok {
		have := slices.Sorted(maps.Keys(sc.Configs))
		msg := fmt.Sprintf("%s=%s names a config ConfigMap %s lacks (it has %s)", from, key, sc.ConfigMap, orNone(have))
		if sc.Error != "" {
			msg = fmt.Sprintf("%s=%s names a config of ConfigMap %s: %s", from, key, sc.ConfigMap, sc.Error)
		}
		ev := fmt.Sprintf("%s=%s", from, key)
		if l.evidence != "" {
			ev += "; " + l.evidence // what the config manager's failure shows
		}
		l.fail(SharingConfigUnknown, msg, ev)
		return true
	}
	if l.code != "" {
		return false
	}
	if cfg.Kind == snapshot.MPS {
		if msg, ev, bad := mpsDaemon(n, pods, now); bad {
			l.fail(MPSDaemonNotReady, fmt.Sprintf("config %s of ConfigMap %s (%s) shares by MPS: %s", key, sc.ConfigMap, from, msg), ev)
			return true
		}
	}
	for _, r := range cfg.Resources {
		physical, ok := physicalCount(n.Labels, r.Name)
		if !ok {
			continue
		}
		asked, got := physical*r.Replicas, n.Devices[r.As].Capacity
		if got == asked {
			continue
		}
		l.fail(SharingNotApplied, fmt.Sprintf("config %s of ConfigMap %s (%s) asks %s of %s, %d replicas each: %d %s for %d; the node advertises %d %s",
			key, sc.ConfigMap, from, cfg.Kind, r.Name, r.Replicas, asked, r.As, physical, got, r.As), devicesText(n.Devices))
		return true
	}
	return false
}

// sharingConfig is the device plugin config the node picks, by its label,
// else the policy's default, and where the pick comes from; key is empty
// when it picks none, found false when the ConfigMap lacks it.
func sharingConfig(n snapshot.Node, sc *snapshot.SharingConfigs) (cfg snapshot.SharingConfig, key, from string, found bool) {
	if sc == nil {
		return cfg, "", "", false
	}
	key, from = n.Labels[operand.DevicePluginConfigLabel], "label "+operand.DevicePluginConfigLabel
	if key == "" {
		key, from = sc.Default, "the ClusterPolicy's devicePlugin.config.default"
	}
	cfg, found = sc.Configs[key]
	return cfg, key, from, found && key != ""
}

// physicalCount is how many devices of a resource GFD counts on the node,
// before sharing: nvidia.com/gpu.count for nvidia.com/gpu, GFD's
// nvidia.com/mig-<profile>.count for a MIG resource.
func physicalCount(labels map[string]string, resource string) (int64, bool) {
	key := operand.GPUCountLabel
	if strings.HasPrefix(resource, snapshot.MIGResourcePrefix) {
		key = resource + operand.MIGCountSuffix
	} else if resource != snapshot.GPUResource {
		return 0, false
	}
	v, err := strconv.ParseInt(labels[key], 10, 64)
	return v, err == nil
}

// mpsDaemon says what is wrong with the node's MPS control daemon, if
// anything: none, or its pod not ready.
func mpsDaemon(n snapshot.Node, pods []*snapshot.Pod, now time.Time) (msg, evidence string, bad bool) {
	var best *snapshot.Pod
	for _, p := range pods {
		if p.DaemonSet != operand.MPSDaemonSet {
			continue
		}
		if p.Present() && p.Health.Ready {
			return "", "", false
		}
		best = p
	}
	if best == nil {
		msg = fmt.Sprintf("no pod of DaemonSet %s on the node (it runs where %s=true; here %q)",
			operand.MPSDaemonSet, operand.MPSCapableLabel, n.Labels[operand.MPSCapableLabel])
		return msg, msg, true
	}
	return fmt.Sprintf("pod %s of DaemonSet %s is not running and ready", best.Name, operand.MPSDaemonSet), podEvidence(best, now), true
}

// migState judges the MIG manager's state label and the layout it names;
// true when it found something.
func (c chain) migState(links []link, i int, n snapshot.Node, now time.Time, stuckAfter time.Duration) bool {
	l := &links[i]
	if l.code != "" {
		return false
	}
	layout, state := n.Labels[operand.MIGConfigLabel], n.Labels[operand.MIGChange.StateLabel]
	ev := fmt.Sprintf("label %s=%s, %s=%s", operand.MIGConfigLabel, layout, operand.MIGChange.StateLabel, state)
	if mc := c.offeredMIG(); mc != nil && layout != "" {
		if _, ok := mc.Layouts[layout]; !ok {
			msg := fmt.Sprintf("label %s=%s names a layout ConfigMap %s lacks (it has %s)", operand.MIGConfigLabel, layout, mc.ConfigMap,
				orNone(slices.Sorted(maps.Keys(mc.Layouts))))
			if mc.Error != "" {
				msg = fmt.Sprintf("label %s=%s names a layout of ConfigMap %s: %s", operand.MIGConfigLabel, layout, mc.ConfigMap, mc.Error)
			}
			l.fail(MIGConfigUnknown, msg, ev)
			return true
		}
	}
	switch since := n.LabelChanges[operand.MIGChange.StateLabel].Time; {
	case state == operand.MIGFailed:
		l.fail(MIGFailed, fmt.Sprintf("the MIG manager failed to apply layout %s (label %s=%s)", layout, operand.MIGChange.StateLabel, state), ev)
	case operand.MIGChanging(operand.MIGChange.StateLabel, state) && stuckAfter > 0 && !since.IsZero() && now.Sub(since) > stuckAfter:
		var paused []string
		for j := range links {
			if p := links[j].pause; p != nil && p.Value == operand.MIGChange.Value {
				paused = append(paused, links[j].op.LabelKey())
				links[j].blockers = []int{i} // they wait on the MIG manager: one cause
			}
		}
		msg := fmt.Sprintf("the MIG manager has been applying layout %s (%s) since %s (%s), longer than %s", layout, state,
			since.UTC().Format(time.RFC3339), age(now, since), stuckAfter)
		if len(paused) > 0 {
			msg += fmt.Sprintf("; left %s: %s", operand.MIGChange.Value, strings.Join(paused, ", "))
		}
		l.fail(MIGStuck, msg, ev)
	default:
		return false
	}
	return true
}

// offeredMIG is the MIG manager's ConfigMap, nil when not read.
func (c chain) offeredMIG() *snapshot.MIGConfigs {
	if c.offered == nil {
		return nil
	}
	return c.offered.MIG
}

// migLayout compares the MIG devices advertised with the node's layout,
// once applied, under the strategy GFD labels the node with: mixed
// advertises nvidia.com/mig-<profile> for each profile, single advertises
// MIG devices of one profile as nvidia.com/gpu, GFD suffixing the product
// label with -MIG-<profile>.
func (c chain) migLayout(l *link, n snapshot.Node, advertising bool) {
	mc := c.offeredMIG()
	layout := n.Labels[operand.MIGConfigLabel]
	if mc == nil || !advertising || l.code != "" || n.Labels[operand.MIGChange.StateLabel] != operand.MIGSuccess {
		return
	}
	entries, ok := mc.Layouts[layout]
	if !ok {
		return
	}
	ev := fmt.Sprintf("label %s=%s, %s=%s; %s", operand.MIGConfigLabel, layout, operand.MIGStrategyLabel,
		n.Labels[operand.MIGStrategyLabel], devicesText(n.Devices))
	variants := snapshot.Variants(entries)
	switch n.Labels[operand.MIGStrategyLabel] {
	case "mixed":
		gpus, err := strconv.ParseInt(n.Labels[operand.GPUCountLabel], 10, 64)
		if err != nil {
			return
		}
		got := map[string]int64{}
		for name, d := range n.Devices {
			if strings.HasPrefix(name, snapshot.MIGResourcePrefix) && d.Capacity > 0 {
				got[name] = d.Capacity
			}
		}
		var want []string
		for _, v := range variants {
			w, ok := mixed(v, gpus)
			if !ok || maps.Equal(w, got) {
				return // a variant it matches, or one that cannot be told
			}
			want = append(want, countsText(w))
		}
		l.fail(MIGLayoutMismatch, fmt.Sprintf("layout %s of ConfigMap %s asks, for %d GPUs under the mixed strategy, %s; the node advertises %s",
			layout, mc.ConfigMap, gpus, strings.Join(want, " or "), countsText(got)), ev)
	case "single":
		product := n.Labels[operand.GPUProductLabel]
		_, has, found := strings.Cut(product, "-MIG-")
		if !found {
			return
		}
		var want []string
		for _, v := range variants {
			p, ok := singleProfile(v)
			if !ok || p == has {
				return
			}
			want = append(want, p)
		}
		l.fail(MIGLayoutMismatch, fmt.Sprintf("layout %s of ConfigMap %s asks MIG devices %s under the single strategy; GFD labels the GPUs %s=%s",
			layout, mc.ConfigMap, strings.Join(want, " or "), operand.GPUProductLabel, product), ev)
	}
}

// mixed is what a layout's entries advertise under the mixed strategy on a
// node of gpus GPUs, by MIG resource; false when an entry lists devices of
// its own or MIG is enabled with no devices (either cannot be told).
func mixed(entries []snapshot.MIGEntry, gpus int64) (map[string]int64, bool) {
	out := map[string]int64{}
	for _, e := range entries {
		if !e.All {
			return nil, false
		}
		if !e.Enabled {
			continue
		}
		if len(e.Profile) == 0 {
			return nil, false
		}
		for p, k := range e.Profile {
			out[snapshot.MIGResource(p)] += k * gpus
		}
	}
	return out, true
}

// singleProfile is the one MIG profile a layout gives every GPU, which the
// single strategy needs; false when it gives none or several.
func singleProfile(entries []snapshot.MIGEntry) (string, bool) {
	var out string
	for _, e := range entries {
		if !e.Enabled || len(e.Profile) != 1 {
			return "", false
		}
		for p := range e.Profile {
			if out != "" && out != p {
				return "", false
			}
			out = p
		}
	}
	return out, out != ""
}

func countsText(m map[string]int64) string {
	if len(m) == 0 {
		return "no MIG device"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[name], name))
	}
	return strings.Join(parts, ", ")
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
