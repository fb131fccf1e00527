package babelqueue

import (
	"context"
	"maps"
	"time"
)

// HeaderSource gives the headers of a received message on demand. A
// binding whose messages carry their headers in a form of their own (the
// header list of a Kafka record) offers one, so that a consumer that only
// looks a few headers up never pays for the whole map. A HeaderSource is
// read-only and safe for concurrent use.
type HeaderSource interface {
	// LookupHeader returns the value of key and whether the message
	// carries it; of a key carried more than once, the last value.
	LookupHeader(key string) (string, bool)
	// HeaderMap returns a new map of every header, the last value of a key
	// carried more than once winning; nil when the message has none.
	HeaderMap() map[string]string
}

// DeferHeaders makes src the source of m's headers instead of the Headers
// map, which it sets to nil: while Headers stays nil, Header reads through
// src, and FillHeaders copies every header into Headers once a caller needs
// the map. A binding calls it before handing the message out, and only for
// a caller that asked for deferred headers (DeferredHeaderPopper).
func (m *ReceivedMessage) DeferHeaders(src HeaderSource) {
	m.Headers, m.headers = nil, src
}

// FillHeaders makes Headers hold every header of m, when they were deferred
// (DeferHeaders) and Headers is still nil; in every case it ends the
// deferral, so that from then on Headers alone holds m's headers. Like any
// change of m, it must not run concurrently with another use of m.
func (m *ReceivedMessage) FillHeaders() {
	if m.headers != nil {
		if m.Headers == nil {
			m.Headers = m.headers.HeaderMap()
		}
		m.headers = nil
	}
}

// DeferredHeaderPopper is an optional Transport capability for a binding
// that can hand a message out without building its Headers map.
// PopDeferredHeaders behaves as Pop, except that the message's headers may
// be deferred (ReceivedMessage.DeferHeaders): Header works as always, and
// Headers is nil until FillHeaders.
//
// The App pops through it when its transport offers it. A delivery that
// its handler settles at once never builds the map; the App fills the
// headers before a message goes down any other path (a retry, a dead
// letter, a hand-back, a hook), and the handler's context reads them
// through the source (HeadersFromContext, IsReplay). A decorator that does
// not offer it makes the App use Pop, whose messages carry the full map.
type DeferredHeaderPopper interface {
	PopDeferredHeaders(ctx context.Context, queue string, timeout time.Duration) (*ReceivedMessage, error)
}

// headerView is the headers of the message being handled, as a handler's
// context holds them: a map, or the binding's source of deferred headers.
type headerView struct {
	m   map[string]string
	src HeaderSource
}

// viewOf returns the headers of m as they are now.
func viewOf(m *ReceivedMessage) headerView {
	return headerView{m: m.Headers, src: m.headers}
}

func (v *headerView) lookup(key string) (string, bool) {
	if v == nil {
		return "", false
	}
	if v.src != nil {
		return v.src.LookupHeader(key)
	}
	s, ok := v.m[key]
	return s, ok
}

// clone returns a new map of every header, nil when there is none.
func (v *headerView) clone() map[string]string {
	switch {
	case v == nil:
		return nil
	case v.src != nil:
		return v.src.HeaderMap()
	default:
		return maps.Clone(v.m)
	}
}
