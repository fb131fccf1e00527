package babelqueue

// delivery is what the App allocates for one delivered message, in one
// piece: its decoded Envelope and the handler's context. A binding may
// have it made ahead of the App (Predecode).
type delivery struct {
	env Envelope
	ctx deliveredContext

	body string // the Body env was decoded from
	err  error  // the decode error; env is unset when it is not nil
}

// Predecode decodes Body now, for a binding that reads messages ahead of
// the App on a goroutine of its own (a prefetching Pop): the App's consume
// loop then uses that result instead of decoding Body itself, so a body is
// still decoded once per delivery, but off the consume loop. The result
// counts only as long as Body is unchanged: a message whose Body is
// changed after Predecode (a binding's attempts rule, a decorator) is
// decoded again by the App. Calling it is optional, and it must be done
// before the message is handed out, not concurrently with another use of
// the message.
func (m *ReceivedMessage) Predecode() {
	d := &delivery{body: m.Body}
	d.err = decodeStringInto(&d.env, m.Body)
	m.pre = d
}

// decodeDelivery returns the delivery of msg with its Body decoded: the
// one Predecode made when it still matches the Body, else a new one. A
// predecoded delivery is used once: should the same message be delivered
// again, its Body is decoded afresh.
func decodeDelivery(msg *ReceivedMessage) (*delivery, error) {
	if d := msg.pre; d != nil {
		msg.pre = nil
		if d.body == msg.Body {
			return d, d.err
		}
	}
	d := &delivery{body: msg.Body}
	d.err = decodeStringInto(&d.env, msg.Body)
	return d, d.err
}
