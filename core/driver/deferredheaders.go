package driver

import (
	"maps"
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

// DeferHeaders makes src the source of m's headers and sets the Headers map
// to nil. While Headers stays nil, Header reads through src, and
// FillHeaders copies every header into Headers once a caller needs the map.
// A binding calls it before handing the message out, and only for the App's
// Receive; a binding's own Pop fills them first.
func (m *ReceivedMessage) DeferHeaders(src HeaderSource) {
	m.Headers, m.headers = nil, src
}

// FillHeaders ends a deferral of m's headers, so that from then on Headers
// alone holds them. When they were deferred (DeferHeaders) and Headers is
// still nil, it copies every header into Headers. Like any change of m, it
// must not run concurrently with another use of m.
func (m *ReceivedMessage) FillHeaders() {
	if m.headers != nil {
		if m.Headers == nil {
			m.Headers = m.headers.HeaderMap()
		}
		m.headers = nil
	}
}

// CloneHeaders returns a copy of the message's headers, or nil for a nil
// message. It reads them from the deferred source (DeferHeaders) when there
// is one, else from Headers.
func (m *ReceivedMessage) CloneHeaders() map[string]string {
	switch {
	case m == nil:
		return nil
	case m.Headers == nil && m.headers != nil:
		return m.headers.HeaderMap()
	default:
		return maps.Clone(m.Headers)
	}
}
