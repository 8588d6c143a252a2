package kube

import (
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// gzipServer answers every request with body, gzipped when the request
// accepts gzip, and remembers the Accept-Encoding it was sent.
func gzipServer(t *testing.T, body []byte) (*httptest.Server, *string) {
	accepted := new(string)
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*accepted = r.Header.Get("Accept-Encoding")
		if *accepted != "gzip" {
			w.Write(body)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(body)
		zw.Close()
	}))
	t.Cleanup(s.Close)
	return s, accepted
}

// tlsConfig is a client config that trusts s.
func tlsConfig(s *httptest.Server) *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// client is the HTTP client under reading's clientset for cfg.
func client(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	cs, err := reading(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs.CoreV1().RESTClient().(*rest.RESTClient).Client
}

func readAll(t *testing.T, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// The reading client asks for gzip and hands the body on inflated (Go's
// transport does); with --disable-compression it asks for none; a request
// that names its own encoding gets the body as the server sent it.
func TestReadingClientInflates(t *testing.T) {
	body := bytes.Repeat([]byte("a pod, "), 10000)
	s, accepted := gzipServer(t, body)
	for _, tc := range []struct {
		name    string
		disable bool
		own     string // the request's own Accept-Encoding
		want    string // the Accept-Encoding the server gets
		gzipped bool   // the body comes as the server gzipped it
	}{
		{name: "default", want: "gzip"},
		{name: "disable-compression", disable: true, want: ""},
		{name: "own encoding", own: "gzip", want: "gzip", gzipped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tlsConfig(s)
			cfg.DisableCompression = tc.disable
			req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
			if tc.own != "" {
				req.Header.Set("Accept-Encoding", tc.own)
			}
			resp, got := readAll(t, client(t, cfg), req)
			if *accepted != tc.want {
				t.Errorf("the server was sent Accept-Encoding %q, want %q", *accepted, tc.want)
			}
			if tc.gzipped {
				if resp.Header.Get("Content-Encoding") != "gzip" || bytes.Equal(got, body) {
					t.Errorf("the body was inflated (Content-Encoding %q), want it as sent", resp.Header.Get("Content-Encoding"))
				}
				return
			}
			if !bytes.Equal(got, body) {
				t.Errorf("read %d bytes unlike the %d sent", len(got), len(body))
			}
			if ce := resp.Header.Get("Content-Encoding"); ce != "" || resp.ContentLength != -1 && resp.ContentLength != int64(len(body)) {
				t.Errorf("Content-Encoding %q, length %d: the response still describes the gzipped body", ce, resp.ContentLength)
			}
		})
	}
}

// A body that claims gzip and is not fails its read, not silently.
func TestReadingClientBadGzip(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write([]byte("not gzip at all"))
	}))
	defer s.Close()
	resp, err := client(t, tlsConfig(s)).Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("a body that is not gzip was read without an error")
	}
}
