package wire

import (
	"crypto/rand"
	"fmt"
	"unsafe"
)

// Maker builds many envelopes byte for byte as Make does, for a caller that
// encodes each before making the next, as a batch publish does. It reuses
// one envelope and one data buffer, and writes the random ids of all its
// envelopes into shared blocks, so that a batch costs a few allocations
// instead of three per envelope.
//
// The envelope Make returns is valid until the Maker's next Make; its ids
// are strings that stay valid and unchanged for good (id blocks are
// written once, never reused), as are the bytes Encode returned for it. A
// Maker is not safe for concurrent use and must not be copied once used
// (a copy would share its id block and random bytes); its zero value is
// ready.
type Maker struct {
	env  Envelope
	cfg  *makeConfig // what the options write; on the heap, as they see it through a pointer
	data []byte      // the data JSON of env
	ids  []byte      // id text block: written up to len, never rewritten
	rnd  []byte      // the part of ahead not used yet
	// ahead holds random bytes read in one crypto/rand call for the id
	// pairs of the next envelopes; each 32 bytes serve one pair and are
	// cleared as they are used.
	ahead [64 * 32]byte
}

// maxMakerData is the largest data buffer a Maker keeps for the next
// envelope.
const maxMakerData = 64 << 10

// maxIDBlock caps the bytes of one id block.
const maxIDBlock = 64 << 10

// Make builds the envelope Make(job, data, opts...) would build, valid
// until the next call. left is how many envelopes the caller still expects
// to make with m, this one included, so that a new id block is sized for
// them (at least 1 is assumed).
func (m *Maker) Make(left int, job string, data any, opts ...MakeOption) (*Envelope, error) {
	if IsBlank(job) {
		return nil, fmt.Errorf("%w: job is blank", ErrInvalidEnvelope)
	}
	if m.cfg == nil {
		m.cfg = new(makeConfig)
	}
	c := m.cfg
	*c = makeConfig{}
	c.apply(opts)
	if err := c.err; err != nil {
		*c = makeConfig{}
		return nil, fmt.Errorf("babelqueue: making %s: %w", job, err)
	}
	if cap(m.data) > maxMakerData {
		m.data = nil
	}
	out, err := appendData(m.data[:0], data)
	if err != nil {
		*c = makeConfig{}
		return nil, within("making "+job, err)
	}
	m.data = out
	switch traceBlank, idBlank := IsBlank(c.traceID), IsBlank(c.id); {
	case traceBlank && idBlank:
		c.traceID, c.id = m.idPair(left)
	case traceBlank:
		c.traceID = NewID()
	case idBlank:
		c.id = NewID()
	}
	c.fill(&m.env, job, unsafe.String(unsafe.SliceData(out), len(out)))
	return &m.env, nil
}

// idPair returns a trace id and a message id as newIDPair does, their text
// written into the id block.
func (m *Maker) idPair(left int) (string, string) {
	const pair = 72
	if cap(m.ids)-len(m.ids) < pair {
		m.ids = make([]byte, 0, min(pair*max(left, 1), maxIDBlock/pair*pair))
	}
	start := len(m.ids)
	m.ids = m.ids[:start+pair]
	s := m.ids[start:]
	if len(m.rnd) < 32 {
		m.rnd = m.ahead[:min(32*max(left, 1), len(m.ahead))]
		_, _ = rand.Read(m.rnd) // crypto/rand.Read never fails (it aborts the program instead)
	}
	u := m.rnd[:32]
	formatUUIDv4((*[36]byte)(s[:36]), [16]byte(u[:16]))
	formatUUIDv4((*[36]byte)(s[36:]), [16]byte(u[16:]))
	clear(u) // a random id is never kept after it was handed out
	m.rnd = m.rnd[32:]
	return unsafe.String(&s[0], 36), unsafe.String(&s[36], 36)
}
