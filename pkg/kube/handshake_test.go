package kube

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// handshakeServer is a TLS server that asks for a client certificate, as
// an API server does, and counts its connections and the requests that
// came on a resumed session. Each answer takes a while, so that requests
// sent side by side need a connection each; each handshake too, by delay.
type handshakeServer struct {
	*httptest.Server
	mu         sync.Mutex
	conns      int
	resumed    int             // requests on a resumed session
	fullByAddr map[string]bool // connections that shook hands in full
	requests   int
}

func newHandshakeServer(t *testing.T, tickets bool, delay time.Duration) *handshakeServer {
	s := &handshakeServer{fullByAddr: map[string]bool{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		if r.TLS.DidResume {
			s.resumed++
		} else {
			s.fullByAddr[r.RemoteAddr] = true
		}
		s.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1"}`))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, SessionTicketsDisabled: !tickets,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { time.Sleep(delay); return nil, nil }}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// get sends n GETs side by side through c and waits for them.
func (s *handshakeServer) get(t *testing.T, c *http.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/version", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
}

// client is the reading client of cfg, the server's own config when nil.
func (s *handshakeServer) client(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	if cfg == nil {
		cfg = s.config()
	}
	c, err := readingClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *handshakeServer) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// onFastLink has every connect count as fast for the rest of the test: a
// loopback connect on a busy machine (CI beside other clusters) took more
// than fastLink, and the client rightly shook hands side by side.
func onFastLink(t *testing.T) {
	was := fastLink
	fastLink = time.Hour
	t.Cleanup(func() { fastLink = was })
}

// On a fast link, one connection of a fresh client shakes hands in full;
// the others, opened side by side with it, wait for its session ticket and
// resume it.
func TestReadingClientResumesOneHandshake(t *testing.T) {
	onFastLink(t)
	s := newHandshakeServer(t, true, 0)
	s.get(t, s.client(t, nil), 6)
	if s.conns != 6 || s.requests != 6 {
		t.Fatalf("%d connections for %d requests, want 6 for 6 (the requests must overlap)", s.conns, s.requests)
	}
	if full := len(s.fullByAddr); full != 1 || s.resumed != 5 {
		t.Errorf("%d connections shook hands in full and %d requests resumed, want 1 and 5", full, s.resumed)
	}
}

// A server that gives no tickets keeps none waiting: every connection
// shakes hands in full, once the first has had its answer.
func TestReadingClientWithoutTickets(t *testing.T) {
	onFastLink(t)
	s := newHandshakeServer(t, false, 0)
	s.get(t, s.client(t, nil), 4)
	if full := len(s.fullByAddr); full != 4 || s.resumed != 0 {
		t.Errorf("%d connections shook hands in full and %d requests resumed, want 4 and 0", full, s.resumed)
	}
}

// On a slow link (a connect slower than fastLink) nothing waits: the
// connections shake hands side by side, in full. The server takes 200 ms
// over each handshake, so that no ticket is in before the others have
// started theirs, however late a busy machine runs them (without it, one
// run in a hundred or so on a busy machine saw a ticket in time).
func TestReadingClientSlowLinkDoesNotWait(t *testing.T) {
	s := newHandshakeServer(t, true, 200*time.Millisecond)
	cfg := s.config()
	var d net.Dialer
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(2 * fastLink)
		return d.DialContext(ctx, network, addr)
	}
	s.get(t, s.client(t, cfg), 6)
	if full := len(s.fullByAddr); full < 2 {
		t.Errorf("%d connections shook hands in full, want several side by side", full)
	}
}

// A server that is not TLS gets client-go's own client.
func TestReadingClientPlainHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c, err := readingClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}
