package kube

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// A judge's read sends its LISTs side by side over HTTP/1.1, a connection each
// (ConnectReading), so a fresh process opened six TLS connections at once, each
// a full handshake: the API server signs with its key, the client with a client
// certificate's (RSA-2048, as kubeadm and KWOK make them), most of a
// handshake's CPU on both sides. Resumed from a session ticket, a handshake
// skips the signatures. So on a fast link the first connection's handshake goes
// alone, and the others wait for its ticket and resume it, which matters where
// a whole judge takes little more than its handshakes (docs/scale.md,
// "Mechanisms"). On a slow link the round trips cost more than the signatures,
// and every connection shakes hands at once, as before.
//
// client-go's transports have no session cache and no hook for one, so the
// transport is built here from client-go's own parts (rest.TLSConfigFor,
// utilnet.SetTransportDefaults, rest.HTTPWrappersForConfig): what it leaves
// out, reloading certificate files, matters only to long-lived clients.

// fastLink is the TCP connect time (one round trip) under which waiting for
// a ticket costs less than a full handshake's signatures; a loopback
// connect, at a process's start beside its other dials, stays well under it.
// A variable only so that a test on a busy machine (a loopback connect
// there can take longer) may call its link fast.
var fastLink = 2 * time.Millisecond

// handshakeTimeout bounds a handshake, as client-go's transports do.
const handshakeTimeout = 10 * time.Second

// readingClient is an HTTP/1.1 client for cfg whose TLS connections share
// one session, as above, and whose responses gunzip inflates unless cfg
// disables compression; for a server without TLS, client-go's own.
func readingClient(cfg *rest.Config) (*http.Client, error) {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil {
		return rest.HTTPClientFor(cfg)
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return nil, err
	}
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if tc.DialHolder != nil {
		dial = tc.DialHolder.Dial
	}
	proxy := http.ProxyFromEnvironment
	if tc.Proxy != nil {
		proxy = tc.Proxy
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	h := &handshakes{ClientSessionCache: tls.NewLRUClientSessionCache(0), tls: tlsCfg, dial: dial}
	tlsCfg.ClientSessionCache = h
	t := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               proxy, // through a proxy, the transport's own TLS: tickets, no waiting
		TLSHandshakeTimeout: handshakeTimeout,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
		DialContext:         dial,
		DialTLSContext:      h.dialTLS,
		DisableCompression:  true, // gunzip's part
	})
	rt, err := rest.HTTPWrappersForConfig(cfg, inflating(cfg, t))
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: cfg.Timeout}, nil
}

// inflating is rt asking for gzip through gunzip, or rt alone when cfg
// disables compression (kubectl's --disable-compression).
func inflating(cfg *rest.Config, rt http.RoundTripper) http.RoundTripper {
	if cfg.DisableCompression {
		return rt
	}
	return gunzip{next: rt}
}

// handshakes lets one full TLS handshake at a time go on a fast link, until
// a session ticket is in the cache (or the server gives none), so that the
// other connections resume it.
type handshakes struct {
	tls.ClientSessionCache
	tls  *tls.Config
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu   sync.Mutex
	open bool          // a ticket is in, or none will come: no more waiting
	over chan struct{} // made when a full handshake leads; closed when its wait is over
}

// Put keeps a ticket, and the connections waiting for one may go.
func (h *handshakes) Put(key string, cs *tls.ClientSessionState) {
	h.ClientSessionCache.Put(key, cs)
	if cs != nil {
		h.release()
	}
}

// release ends the wait for good: a ticket came, or the leading connection
// read a response without one or failed.
func (h *handshakes) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.open {
		h.open = true
		if h.over != nil {
			close(h.over)
		}
	}
}

// turn waits until this connection may shake hands, and says whether it
// leads (its handshake is the one the others wait for). The first
// connection to get here decides, by how long its TCP connect took (one
// round trip), whether the link is fast enough for the others to wait.
func (h *handshakes) turn(ctx context.Context, connect time.Duration) (lead bool, err error) {
	for {
		h.mu.Lock()
		switch {
		case h.open:
			h.mu.Unlock()
			return false, nil
		case h.over == nil:
			h.over = make(chan struct{})
			h.mu.Unlock()
			if connect >= fastLink {
				h.release()
				return false, nil
			}
			return true, nil
		}
		over := h.over
		h.mu.Unlock()
		select {
		case <-over:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

func (h *handshakes) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	start := time.Now()
	raw, err := h.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	lead, err := h.turn(ctx, time.Since(start))
	if err != nil {
		raw.Close()
		return nil, err
	}
	cfg := h.tls.Clone()
	if cfg.ServerName == "" { // as http.Transport names the server
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			raw.Close()
			return nil, err
		}
		cfg.ServerName = host
	}
	conn := tls.Client(raw, cfg)
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := conn.HandshakeContext(hctx); err != nil {
		raw.Close()
		if lead {
			h.release()
		}
		return nil, err
	}
	if lead { // a TLS 1.3 ticket comes after the handshake, before the first response
		return &firstRead{Conn: conn, done: h.release}, nil
	}
	return conn, nil
}

// firstRead calls done once its first Read returns: by then a server that
// gives tickets has given one.
type firstRead struct {
	*tls.Conn
	once sync.Once
	done func()
}

func (c *firstRead) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.once.Do(c.done)
	return n, err
}
