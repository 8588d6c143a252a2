package main

import "testing"

// The probe's send time is read off kubectl -v=6's log, which kubectl
// writes structured or plain depending on its build: both must parse.
func TestKlogResponseBothFormats(t *testing.T) {
	for line, ms := range map[string]string{
		`I1207 22:18:15.473954   21564 round_trippers.go:560] PATCH https://127.0.0.1:12993/api/v1/nodes/gpu-node-0250?fieldManager=kubectl-label 200 OK in 951 milliseconds`: "951",
		`I1207 22:18:15.473954   21564 round_trippers.go:632] "Response" verb="PATCH" url="https://127.0.0.1:1/api/v1/nodes/n" status="200 OK" milliseconds=12`:               "12",
	} {
		m := klogResponse.FindStringSubmatch(line)
		if m == nil || m[1] != "1207 22:18:15.473954" || m[2]+m[3] != ms {
			t.Errorf("%s: matched %q, want the time and %s ms", line, m, ms)
		}
	}
}
