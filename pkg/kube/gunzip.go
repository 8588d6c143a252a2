package kube

import (
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzip"
	"k8s.io/client-go/rest"
)

// gunzip asks for gzipped responses itself and inflates them with
// klauspost/compress, as Go's transport would with compress/gzip (it then
// needs DisableCompression, or it would not leave the body gzipped). A
// judge's LISTs are gzipped by the API server, inflating them is a large
// share of a judge's CPU, and klauspost's inflater is quicker than
// compress/gzip (BenchmarkInflate measures both; docs/scale.md,
// "Mechanisms"). A request that says its own
// Accept-Encoding, or asks for a range, is left to the transport, as Go's
// would be.
type gunzip struct{ next http.RoundTripper }

func (g gunzip) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept-Encoding") != "" || req.Header.Get("Range") != "" || req.Method == http.MethodHead {
		return g.next.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper leaves its request as it came
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := g.next.RoundTrip(req)
	if err != nil || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return resp, err
	}
	resp.Body = &gzipBody{body: resp.Body}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	return resp, nil
}

// gzipBody inflates a response body, starting at its first Read (an error
// response may never be read).
type gzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error
}

func (b *gzipBody) Read(p []byte) (int, error) {
	if b.zr == nil && b.err == nil {
		b.zr, b.err = gzip.NewReader(b.body)
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.zr.Read(p)
}

func (b *gzipBody) Close() error { return b.body.Close() }

// readingClient is client-go's own HTTP client for cfg, held to HTTP/1.1
// (each LIST on a connection of its own: reading, in kube.go) and inflating
// through gunzip unless cfg disables compression (kubectl's
// --disable-compression). gunzip wraps the bare transport, under client-go's
// auth and retry wrappers, as Go's transport inflates beneath them too.
func readingClient(cfg *rest.Config) (*http.Client, error) {
	c := rest.CopyConfig(cfg)
	c.NextProtos = []string{"http/1.1"}
	if !cfg.DisableCompression {
		c.DisableCompression = true // gunzip asks for gzip itself
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return gunzip{next: rt} })
	}
	return rest.HTTPClientFor(c)
}
