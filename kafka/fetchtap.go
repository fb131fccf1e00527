package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"

	kafkago "github.com/segmentio/kafka-go"
)

// fetchTap is a broker connection that reads the record batch headers of
// the Fetch responses it carries, passing every byte on untouched. It
// parses the request frames written (to learn which correlation ids are
// Fetch requests and their versions) and the response frames read, in
// whatever pieces they pass, and hands each batch header to onBatch, and
// each record's key length to onRecord, before kafka-go has decoded the
// record; either may be nil. A stream it cannot follow is passed on without
// being read further.
type fetchTap struct {
	net.Conn
	onBatch  func(batchHeader)
	onRecord func(recordKey)

	mu      sync.Mutex
	pending map[int32]int16 // correlation id -> Fetch version, requests not yet answered

	wmu sync.Mutex
	req frameReader

	rmu     sync.Mutex
	resp    frameReader
	scanner *fetchScanner // of the response frame being read, nil if not a Fetch
}

// maxPendingFetches bounds the Fetch requests a tap remembers; kafka-go's
// partition reader has one in flight at a time.
const maxPendingFetches = 64

func newFetchTap(c net.Conn, onBatch func(batchHeader), onRecord func(recordKey)) *fetchTap {
	t := &fetchTap{Conn: c, onBatch: onBatch, onRecord: onRecord, pending: make(map[int32]int16)}
	// Request header: api_key, api_version, correlation_id.
	t.req = frameReader{headerLen: 2 + 2 + 4, onHeader: t.request}
	// Response header: correlation_id.
	t.resp = frameReader{headerLen: 4, onHeader: t.response, onBody: t.body}
	return t
}

func (t *fetchTap) Write(p []byte) (int, error) {
	n, err := t.Conn.Write(p)
	t.wmu.Lock()
	t.req.feed(p[:n])
	t.wmu.Unlock()
	return n, err
}

func (t *fetchTap) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	t.rmu.Lock()
	t.resp.feed(p[:n])
	t.rmu.Unlock()
	return n, err
}

func (t *fetchTap) request(h []byte) {
	apiKey := int16(binary.BigEndian.Uint16(h))
	version := int16(binary.BigEndian.Uint16(h[2:]))
	id := int32(binary.BigEndian.Uint32(h[4:]))
	if apiKey != fetchAPIKey {
		return
	}
	t.mu.Lock()
	if len(t.pending) >= maxPendingFetches {
		clear(t.pending) // a stream out of step: forget, do not grow
	}
	t.pending[id] = version
	t.mu.Unlock()
}

func (t *fetchTap) response(h []byte) {
	id := int32(binary.BigEndian.Uint32(h))
	t.mu.Lock()
	version, ok := t.pending[id]
	delete(t.pending, id)
	t.mu.Unlock()
	t.scanner = nil
	if ok {
		t.scanner = newFetchScanner(version, t.onBatch)
		if t.scanner != nil {
			t.scanner.onRecord = t.onRecord
		}
	}
}

func (t *fetchTap) body(p []byte) {
	if t.scanner != nil {
		t.scanner.feed(p)
	}
}

// frameReader follows a stream of size-prefixed Kafka frames in pieces. It
// gathers each frame's size and first headerLen bytes for onHeader, and
// hands the rest of the frame to onBody. A frame too short for its header
// leaves the stream unreadable (broken): everything after it is passed over.
type frameReader struct {
	headerLen int
	onHeader  func(h []byte)
	onBody    func(p []byte)

	buf    [4 + 8]byte
	got    int
	left   int64 // bytes of the current frame's body still to come
	broken bool
}

func (f *frameReader) feed(p []byte) {
	for len(p) > 0 && !f.broken {
		if f.left > 0 {
			n := min(int64(len(p)), f.left)
			if f.onBody != nil {
				f.onBody(p[:n])
			}
			f.left -= n
			p = p[n:]
			continue
		}
		want := 4 + f.headerLen
		n := copy(f.buf[f.got:want], p)
		f.got += n
		p = p[n:]
		if f.got < want {
			return
		}
		f.got = 0
		size := int64(int32(binary.BigEndian.Uint32(f.buf[:4])))
		if size < int64(f.headerLen) {
			f.broken = true
			return
		}
		f.onHeader(f.buf[4:want])
		f.left = size - int64(f.headerLen)
		if f.left == 0 && f.onBody != nil {
			f.onBody(nil)
		}
	}
}

// tappedDialer returns a copy of d whose connections are fetchTaps
// reporting to onBatch and onRecord (either may be nil). TLS, when d has it, is set up by the tap's dial
// below the tap, so that the tap reads the plain Kafka stream; SASL runs
// above it, in kafka-go, as before.
func tappedDialer(d *kafkago.Dialer, onBatch func(batchHeader), onRecord func(recordKey)) *kafkago.Dialer {
	td := *d
	dial := td.DialFunc
	if dial == nil {
		nd := &net.Dialer{LocalAddr: td.LocalAddr, FallbackDelay: td.FallbackDelay, KeepAlive: td.KeepAlive}
		dial = nd.DialContext
	}
	td.DialFunc = tapDial(dial, td.TLS, onBatch, onRecord)
	td.TLS = nil
	return &td
}

// tappedNetTransport is netTransport(cfg) whose connections are fetchTaps
// reporting to onBatch, TLS set up below the tap as in tappedDialer.
func tappedNetTransport(cfg *config, onBatch func(batchHeader)) *kafkago.Transport {
	tr := netTransport(cfg)
	tr.Dial = tapDial((&net.Dialer{}).DialContext, tr.TLS, onBatch, nil)
	tr.TLS = nil
	return tr
}

// tapDial returns a dial function that dials with dial, completes a TLS
// handshake when tlsCfg is set, and wraps the connection in a fetchTap.
func tapDial(dial func(ctx context.Context, network, address string) (net.Conn, error), tlsCfg *tls.Config,
	onBatch func(batchHeader), onRecord func(recordKey)) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		if tlsCfg != nil {
			if c, err = clientTLS(ctx, c, tlsCfg, address); err != nil {
				return nil, err
			}
		}
		return newFetchTap(c, onBatch, onRecord), nil
	}
}

// clientTLS completes a TLS handshake on c as kafka-go's Dialer does: the
// server name, when cfg has none, is the host of address.
func clientTLS(ctx context.Context, c net.Conn, cfg *tls.Config, address string) (net.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			host = address
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}
