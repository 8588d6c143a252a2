package gpuopstest

import "testing"

// What differs between two runs of the same command is made the same, and
// nothing else is touched.
func TestNormalize(t *testing.T) {
	v := Volatile{"t-ab12": "<namespace>", "ab12": "<id>"}
	for in, want := range map[string]string{
		"t-ab12-full OK id=ab12":                                    "<namespace>-full OK id=<id>",
		"since 2026-12-03T18:22:01Z (3h0m)":                         "since <time> (<age>",
		"written by nvidia-mig-manager 4m38s ago":                   "written by nvidia-mig-manager <age> ago",
		"      by driver-manager 3h4m56s ago":                       "      by driver-manager <age> ago",
		"      seconds: 1796327451":                                 "      seconds: <time>",
		"<title>GPU Operator fleet · kwok-gpuops-t9-x1 · x</title>": "<title>GPU Operator fleet · <cluster> · x</title>",
		"lab-node-1 UNUSABLE gpus-not-advertised device-plugin":     "lab-node-1 UNUSABLE gpus-not-advertised device-plugin",
		"TOTAL_PODS=9": "TOTAL_PODS=9",
	} {
		if got := v.normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
		if again := v.normalize(want); again != want {
			t.Errorf("normalize is not idempotent on %q: %q", want, again)
		}
	}
}

// YAML output is compared word by word: the library folds a long string
// where its line runs out, which an age of another length moves.
func TestFolded(t *testing.T) {
	if !folded([]string{"summary", "-o", "yaml"}) || !folded([]string{"audit", "-o", "openreports", "-l", "x"}) {
		t.Error("YAML output must compare word by word")
	}
	if folded([]string{"audit", "-o", "table"}) || folded([]string{"audit"}) {
		t.Error("a table and the text lines must compare byte for byte")
	}
	if a, b := OneSpaced("by driver-manager <age>\n  ago, longer"), OneSpaced("by driver-manager\n  <age> ago, longer"); a != b {
		t.Errorf("%q != %q", a, b)
	}
}
