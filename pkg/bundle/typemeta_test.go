package bundle

import (
	"encoding/json"
	"testing"
)

// typeMeta reads what a decoding reads, or says it cannot tell: never a
// different apiVersion or kind. The documents come from a JSON decoder,
// valid.
func TestTypeMetaAsDecoded(t *testing.T) {
	for _, c := range []struct {
		doc  string
		read bool // read without decoding
	}{
		{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`, true},
		{`{"kind":"Pod","apiVersion":"v1"}`, true},
		{` { "metadata" : {"name":"a,}]\"{"}, "data": [1, {"x": "}"}], "n": 3.5, "b": true, "apiVersion": "v1", "kind" : "ConfigMap" }`, true},
		{`{"kind":"List","apiVersion":"v1","items":[{"kind":"Pod"}]}`, true},
		{`{"apiVersion":"v1","metadata":{}}`, false},
		{`{"apiVersion":"v1","kind":"Pod\u0041"}`, false},
		{`{"api\u0056ersion":"v1","kind":"Pod"}`, false},
		{`{"metadata":{"name":"x"}}`, false},
		{`{}`, false},
		{`[]`, false},
	} {
		var want struct{ APIVersion, Kind string }
		_ = json.Unmarshal([]byte(c.doc), &want)
		apiVersion, kind, found := typeMeta([]byte(c.doc))
		if found != c.read || found && (apiVersion != want.APIVersion || kind != want.Kind) {
			t.Errorf("%s: read %q %q (%v), decoded %q %q", c.doc, apiVersion, kind, found, want.APIVersion, want.Kind)
		}
	}
}
