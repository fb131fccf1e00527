package wire

import (
	"fmt"
	"unsafe"
)

// WithData returns a copy of e whose data object is raw (validated, kept
// byte for byte); e is not changed. For a decoded envelope the copy reads
// as if it had been received with raw in place of data: Raw and Encode of
// the copy show raw, and every other byte of the body is kept. It fails
// with ErrInvalidData when raw is not one JSON object.
func (e *Envelope) WithData(raw []byte) (*Envelope, error) {
	open, end, err := scanTopObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	obj := string(raw[open:end])
	c := *e
	if c.DeadLetter != nil {
		dl := *c.DeadLetter
		c.DeadLetter = &dl
	}
	if e.src == "" {
		c.data = obj
		return &c, nil
	}
	p, err := parse(unsafe.Slice(unsafe.StringData(e.src), len(e.src)))
	if err != nil {
		// Decode accepted these bytes, and parse is deterministic.
		return nil, err
	}
	c.src = e.src[:p.data.start] + obj + e.src[p.data.end:]
	c.data = c.src[p.data.start : p.data.start+len(obj)]
	return &c, nil
}
