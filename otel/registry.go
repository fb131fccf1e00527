package otel

import (
	"sync"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/trace"
)

// delivery is one message read through a decorated transport and not yet
// settled. Its fields after creation are guarded by registry.mu.
type delivery struct {
	span    trace.Span
	msg     *babelqueue.ReceivedMessage
	system  string
	queue   string
	msgID   string
	urn     string
	attempt int
	class   babelqueue.BodyClass
	seq     uint64

	handlerRan    bool
	handlerFailed bool
	// outcome and reason are set by the write that replaced the message
	// (retry copy, dead letter, release, redrive); "" until then.
	outcome string
	reason  string
}

// registry tracks the open deliveries of every decorator of one
// Telemetry, and remembers the span of recent attempts that will be
// retried so that the next attempt can link to it. Both are bounded.
type registry struct {
	mu      sync.Mutex
	maxOpen int
	seq     uint64
	byMsg   map[*babelqueue.ReceivedMessage]*delivery
	byID    map[string]*delivery
	// order holds the open deliveries by seq for eviction (oldest first);
	// entries of settled deliveries are skipped lazily.
	order []*delivery

	linkCap   int
	links     map[string]trace.SpanContext
	linkOrder []string
}

func newRegistry(maxOpen, linkCap int) *registry {
	return &registry{
		maxOpen: maxOpen,
		byMsg:   make(map[*babelqueue.ReceivedMessage]*delivery),
		byID:    make(map[string]*delivery),
		linkCap: linkCap,
		links:   make(map[string]trace.SpanContext),
	}
}

// open registers d and returns the deliveries evicted to stay within
// maxOpen; the caller ends their spans.
func (r *registry) open(d *delivery) []*delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	d.seq = r.seq
	r.byMsg[d.msg] = d
	if d.msgID != "" {
		r.byID[d.msgID] = d
	}
	r.order = append(r.order, d)
	var evicted []*delivery
	for len(r.byMsg) > r.maxOpen && len(r.order) > 0 {
		old := r.order[0]
		r.order = r.order[1:]
		if r.byMsg[old.msg] == old {
			r.removeLocked(old)
			evicted = append(evicted, old)
		}
	}
	// Drop settled entries from the front so that order stays bounded.
	for len(r.order) > 0 && r.byMsg[r.order[0].msg] != r.order[0] {
		r.order = r.order[1:]
	}
	if len(r.order) > 2*r.maxOpen+16 {
		live := r.order[:0]
		for _, x := range r.order {
			if r.byMsg[x.msg] == x {
				live = append(live, x)
			}
		}
		clear(r.order[len(live):])
		r.order = live
	}
	return evicted
}

func (r *registry) removeLocked(d *delivery) {
	delete(r.byMsg, d.msg)
	if r.byID[d.msgID] == d {
		delete(r.byID, d.msgID)
	}
}

// lookup returns the open delivery of msg, or nil.
func (r *registry) lookup(msg *babelqueue.ReceivedMessage) *delivery {
	if msg == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byMsg[msg]
}

// lookupID returns the most recent open delivery of the message id, or nil.
func (r *registry) lookupID(id string) *delivery {
	if id == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// close removes d and reports whether it was still open (so that exactly
// one caller ends its span).
func (r *registry) close(d *delivery) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byMsg[d.msg] != d {
		return false
	}
	r.removeLocked(d)
	return true
}

// with runs fn on d's mutable fields under the lock.
func (r *registry) with(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn()
}

// remember stores sc as the last attempt of message id.
func (r *registry) remember(id string, sc trace.SpanContext) {
	if r.linkCap == 0 || id == "" || !sc.IsValid() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.links[id]; !ok {
		r.linkOrder = append(r.linkOrder, id)
	}
	r.links[id] = sc
	for len(r.links) > r.linkCap && len(r.linkOrder) > 0 {
		delete(r.links, r.linkOrder[0])
		r.linkOrder[0] = ""
		r.linkOrder = r.linkOrder[1:]
	}
}

// recalled returns the remembered last attempt of message id.
func (r *registry) recalled(id string) (trace.SpanContext, bool) {
	if id == "" {
		return trace.SpanContext{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sc, ok := r.links[id]
	return sc, ok
}
