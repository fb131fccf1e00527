package wire

import (
	"fmt"
	"unsafe"
)

// Maker builds many envelopes as Make does, byte for byte, sharing its
// allocations among them: the envelopes, their random ids and their data
// JSON are carved out of blocks sized for the messages still to come, so
// that a batch of n envelopes costs a few allocations instead of 3n.
//
// An envelope a Maker returns never changes afterwards (the blocks are
// written once, a full block is replaced, never reused); it keeps its
// blocks alive while it is referenced. A Maker is not safe for concurrent
// use; its zero value is ready.
type Maker struct {
	cfg  makeConfig
	envs []Envelope // unused envelopes of the current block
	ids  []byte     // id text block: written up to len, never rewritten
	data []byte     // data JSON block: written up to len, never rewritten
}

// maxMakerBlock caps the bytes of one id or data block of a Maker.
const maxMakerBlock = 256 << 10

// Make builds the envelope Make(job, data, opts...) would build; left
// is how many envelopes the caller still expects to make with m, this
// one included, so that a new block is sized for them (at least 1 is
// assumed).
func (m *Maker) Make(left int, job string, data any, opts ...MakeOption) (*Envelope, error) {
	if IsBlank(job) {
		return nil, fmt.Errorf("%w: job is blank", ErrInvalidEnvelope)
	}
	left = max(left, 1)
	c := &m.cfg
	*c = makeConfig{}
	c.apply(opts)
	raw, err := m.appendData(left, data)
	if err != nil {
		*c = makeConfig{}
		return nil, fmt.Errorf("babelqueue: making %s: %w", job, err)
	}
	switch traceBlank, idBlank := IsBlank(c.traceID), IsBlank(c.id); {
	case traceBlank && idBlank:
		c.traceID, c.id = m.idPair(left)
	case traceBlank:
		c.traceID = NewID()
	case idBlank:
		c.id = NewID()
	}
	if len(m.envs) == 0 {
		m.envs = make([]Envelope, min(left, maxMakerBlock/int(unsafe.Sizeof(Envelope{}))))
	}
	env := &m.envs[0]
	m.envs = m.envs[1:]
	c.fill(env, job, raw)
	return env, nil
}

// appendData writes the data JSON of data into the data block and returns
// a string viewing it.
func (m *Maker) appendData(left int, data any) (string, error) {
	const guess = 128 // the bytes a data object is assumed to take before one was seen
	if cap(m.data)-len(m.data) < guess {
		m.data = make([]byte, 0, min(guess*left, maxMakerBlock))
	}
	start := len(m.data)
	out, err := appendData(m.data, data)
	if err != nil {
		return "", err
	}
	if unsafe.SliceData(out) != unsafe.SliceData(m.data) {
		// It outgrew the block: out is a new one, its front a copy of
		// bytes earlier strings still view in the old block. Keep the
		// new one, sized for the rest of the batch.
		n := len(out) - start
		fresh := make([]byte, 0, max(min(n*left, maxMakerBlock), n))
		out = append(fresh, out[start:]...)
		start = 0
	}
	m.data = out
	return unsafe.String(&out[start], len(out)-start), nil
}

// idPair returns a trace id and a message id as newIDPair does, their text
// written into the id block.
func (m *Maker) idPair(left int) (string, string) {
	const pair = 72
	if cap(m.ids)-len(m.ids) < pair {
		m.ids = make([]byte, 0, min(pair*left, maxMakerBlock/pair*pair))
	}
	start := len(m.ids)
	m.ids = m.ids[:start+pair]
	s := m.ids[start:]
	var u [32]byte
	randomFill(u[:])
	formatUUIDv4((*[36]byte)(s[:36]), [16]byte(u[:16]))
	formatUUIDv4((*[36]byte)(s[36:]), [16]byte(u[16:]))
	clear(u[:])
	return unsafe.String(&s[0], 36), unsafe.String(&s[36], 36)
}
