package driver

import "github.com/babelqueue/babelqueue-go/core/wire"

// predecoded is a Body decoded ahead of the App (Predecode): the Envelope,
// and the Body it was decoded from.
type predecoded struct {
	env  wire.Envelope
	body string // the Body env was decoded from
	err  error  // the decode error; env is unset when it is not nil
	// ctx is the handler context of the delivery (DecodedWithContext),
	// which shares this allocation.
	ctx DeliveredContext
}

// Predecode decodes Body now, off the App's consume loop, which then uses
// that result instead of decoding Body itself. It is for a binding that
// reads messages ahead of the App on a goroutine of its own (a prefetching
// Pop); a body is still decoded once per delivery. The result counts only
// as long as Body is unchanged: a message whose Body is changed after
// Predecode (a binding's attempts rule, a decorator) is decoded again by
// the App. Calling it is optional, and it must be done before the message
// is handed out, not concurrently with another use of the message.
func (m *ReceivedMessage) Predecode() {
	d := &predecoded{body: m.Body}
	d.err = wire.DecodeStringInto(&d.env, m.Body)
	m.pre = d
}

// Decoded returns the Envelope of Body: the one Predecode made when Body
// is unchanged since, else a new decode. A predecoded Envelope is handed
// out once: should the same message be delivered again, its Body is
// decoded afresh. The App calls it once per delivery.
func (m *ReceivedMessage) Decoded() (*wire.Envelope, error) {
	if d := m.pre; d != nil {
		m.pre = nil
		if d.body == m.Body {
			return &d.env, d.err
		}
	}
	d := &predecoded{body: m.Body}
	d.err = wire.DecodeStringInto(&d.env, m.Body)
	return &d.env, d.err
}
