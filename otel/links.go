package otel

import (
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// linkMemory remembers, by meta.id, the process span of recent attempts
// that will be delivered again, for the next delivery to link to when the
// retry carried no HeaderRetryLink. It holds at most cap entries, the
// oldest forgotten first.
type linkMemory struct {
	mu    sync.Mutex
	cap   int
	seq   uint64
	spans map[string]linkEntry
	order []linkRef // by seq; entries taken or replaced since are skipped
}

type linkEntry struct {
	sc  trace.SpanContext
	seq uint64
}

type linkRef struct {
	id  string
	seq uint64
}

func newLinkMemory(n int) *linkMemory {
	return &linkMemory{cap: n, spans: make(map[string]linkEntry)}
}

// live reports whether r is still the entry of its id.
func (l *linkMemory) live(r linkRef) bool { e, ok := l.spans[r.id]; return ok && e.seq == r.seq }

// put remembers sc as the last attempt of id.
func (l *linkMemory) put(id string, sc trace.SpanContext) {
	if l.cap == 0 || id == "" || !sc.IsValid() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.spans[id] = linkEntry{sc: sc, seq: l.seq}
	l.order = append(l.order, linkRef{id: id, seq: l.seq})
	for len(l.spans) > l.cap {
		old := l.order[0]
		l.order = l.order[1:]
		if l.live(old) {
			delete(l.spans, old.id)
		}
	}
	if len(l.order) > 2*l.cap+16 {
		kept := l.order[:0]
		for _, r := range l.order {
			if l.live(r) {
				kept = append(kept, r)
			}
		}
		clear(l.order[len(kept):])
		l.order = kept
	}
}

// take returns and forgets the last attempt of id.
func (l *linkMemory) take(id string) (trace.SpanContext, bool) {
	if l.cap == 0 || id == "" {
		return trace.SpanContext{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.spans[id]
	if ok {
		delete(l.spans, id)
	}
	return e.sc, ok
}
