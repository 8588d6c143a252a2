package kube

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// InProcess is a client whose requests h answers in this process, with no
// network and no kubeconfig: --from's input served as the API server
// serves it (pkg/bundle.Server), in protobuf where it has it, as the API
// server does, else JSON. Nothing paces it: there is no
// server to spare.
func InProcess(h http.Handler) (kubernetes.Interface, error) {
	cfg := &rest.Config{
		Host:          "http://in-process",
		ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeJSON, AcceptContentTypes: runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON},
		RateLimiter:   flowcontrol.NewFakeAlwaysRateLimiter(),
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: handled{h}})
	if err != nil {
		return nil, fmt.Errorf("in-process client: %w", err)
	}
	return cs, nil
}

// handled is a transport that hands each request to a handler.
type handled struct{ h http.Handler }

func (t handled) RoundTrip(req *http.Request) (*http.Response, error) {
	w := &response{header: http.Header{}, code: http.StatusOK}
	t.h.ServeHTTP(w, req)
	return &http.Response{StatusCode: w.code, Status: http.StatusText(w.code), Header: w.header,
		Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// response is what the handler writes.
type response struct {
	header http.Header
	body   bytes.Buffer
	code   int
}

func (w *response) Header() http.Header         { return w.header }
func (w *response) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *response) WriteHeader(code int)        { w.code = code }
