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

// ReplaceDataFields returns a copy of e whose data has each value at the
// paths of s replaced as FieldSet.Replace does. It returns e itself when
// nothing was replaced. fn must append exactly one valid JSON value: the result
// is not validated again, which is what makes this cheaper than Data,
// Replace and WithData in turn.
func (e *Envelope) ReplaceDataFields(s *FieldSet, fn func(dst, value []byte) (out []byte, ok bool, err error)) (*Envelope, error) {
	data := e.dataJSON()
	view := unsafe.Slice(unsafe.StringData(data), len(data)) // Replace only reads it
	out, err := s.Replace(view, fn)
	if err != nil {
		return nil, err
	}
	if len(out) == len(view) && (len(out) == 0 || &out[0] == &view[0]) {
		return e, nil
	}
	obj := unsafe.String(unsafe.SliceData(out), len(out)) // out is Replace's own new buffer
	c := *e
	if c.DeadLetter != nil {
		dl := *c.DeadLetter
		c.DeadLetter = &dl
	}
	if e.src == "" {
		c.data = obj
		return &c, nil
	}
	start, end, ok := e.dataSpan()
	if !ok {
		return nil, fmt.Errorf("%w: data not found in the received body", ErrInvalidData)
	}
	c.src = e.src[:start] + obj + e.src[end:]
	c.data = c.src[start : start+len(obj)]
	return &c, nil
}

// dataSpan returns where data sits in the received body: e.data is a
// substring of e.src for a decoded envelope (WithData keeps it so), else
// the body is parsed again.
func (e *Envelope) dataSpan() (start, end int, ok bool) {
	if e.data != "" && len(e.src) >= len(e.data) {
		base := uintptr(unsafe.Pointer(unsafe.StringData(e.src)))
		p := uintptr(unsafe.Pointer(unsafe.StringData(e.data)))
		if p >= base && p+uintptr(len(e.data)) <= base+uintptr(len(e.src)) {
			start = int(p - base)
			return start, start + len(e.data), true
		}
	}
	p, err := parse(unsafe.Slice(unsafe.StringData(e.src), len(e.src)))
	if err != nil || !p.data.ok {
		return 0, 0, false
	}
	return p.data.start, p.data.end, true
}
