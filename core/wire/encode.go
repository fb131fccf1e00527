package wire

import (
	"fmt"
	"strconv"
)

// Encode returns the JSON body of the envelope.
//
// For an envelope built by Make (or by hand) it writes compact UTF-8 JSON
// without HTML escaping, with the keys in the order job, trace_id, data,
// meta (id, queue, lang, schema_version, created_at), attempts and, when
// DeadLetter is set, dead_letter.
//
// For an envelope returned by Decode it returns the received bytes with
// only the values of the fields the caller changed rewritten in place
// (CONTRACT.md 2.4): unknown keys, key order, spacing and number spellings stay as
// received. A changed Job is written under the key it was received under
// (job or its urn alias); a meta key or attempts that was missing is added
// after the last member of its object; a DeadLetter set to nil removes the
// block and a new or changed one is written as AnnotateDeadLetter does.
//
// Encode fails with ErrInvalidEnvelope rather than write a body Decode would
// reject: a blank Job or TraceID, Attempts outside [0, MaxAttemptsValue], or a
// Meta.SchemaVersion other than SchemaVersion.
func (e *Envelope) Encode() ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if e.src == "" {
		return e.appendFresh(make([]byte, 0, e.EncodedSizeHint())), nil
	}
	return e.patch()
}

// AppendEncode appends the body Encode returns to dst and returns the
// extended slice; dst is unchanged on error. A caller encoding many
// envelopes can so write them into one buffer.
func (e *Envelope) AppendEncode(dst []byte) ([]byte, error) {
	if err := e.check(); err != nil {
		return dst, err
	}
	if e.src == "" {
		return e.appendFresh(dst), nil
	}
	b, err := e.patch()
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// EncodedSizeHint is about the length of the body Encode writes for an
// envelope built by Make (exact but for escaped characters and a dead
// letter).
func (e *Envelope) EncodedSizeHint() int {
	return 160 + len(e.data) + len(e.metaExtra) + len(e.Job) + len(e.TraceID) + len(e.Meta.ID) + len(e.Meta.Queue)
}

func (e *Envelope) check() error {
	switch {
	case IsBlank(e.Job):
		return fmt.Errorf("%w: job is blank", ErrInvalidEnvelope)
	case IsBlank(e.TraceID):
		return fmt.Errorf("%w: trace_id is blank", ErrInvalidEnvelope)
	case e.Attempts < 0 || e.Attempts > MaxAttemptsValue:
		return fmt.Errorf("%w: attempts %d is out of range [0, %d]", ErrInvalidEnvelope, e.Attempts, MaxAttemptsValue)
	case e.Meta.SchemaVersion != SchemaVersion:
		return fmt.Errorf("%w: schema version %d (this SDK writes %d)", ErrInvalidEnvelope, e.Meta.SchemaVersion, SchemaVersion)
	case e.DeadLetter != nil && (e.DeadLetter.Attempts < 0 || e.DeadLetter.Attempts > MaxAttemptsValue):
		return fmt.Errorf("%w: dead_letter.attempts %d is out of range [0, %d]", ErrInvalidEnvelope, e.DeadLetter.Attempts, MaxAttemptsValue)
	}
	return nil
}

// appendFresh writes the envelope in canonical form.
func (e *Envelope) appendFresh(dst []byte) []byte {
	dst = append(dst, `{"job":`...)
	dst = appendJSONString(dst, e.Job)
	dst = append(dst, `,"trace_id":`...)
	dst = appendJSONString(dst, e.TraceID)
	dst = append(dst, `,"data":`...)
	dst = append(dst, e.dataJSON()...)
	dst = append(dst, `,"meta":{"id":`...)
	dst = appendJSONString(dst, e.Meta.ID)
	dst = append(dst, `,"queue":`...)
	dst = appendJSONString(dst, e.Meta.Queue)
	dst = append(dst, `,"lang":`...)
	dst = appendJSONString(dst, e.Meta.Lang)
	dst = append(dst, `,"schema_version":`...)
	dst = appendInt(dst, int64(e.Meta.SchemaVersion))
	dst = append(dst, `,"created_at":`...)
	dst = appendInt(dst, e.Meta.CreatedAt)
	dst = append(dst, e.metaExtra...)
	dst = append(dst, `},"attempts":`...)
	dst = appendInt(dst, int64(e.Attempts))
	if e.DeadLetter != nil {
		dst = append(dst, `,"dead_letter":`...)
		dst = appendDeadLetter(dst, *e.DeadLetter, nil)
	}
	return append(dst, '}')
}

func (e *Envelope) deadLetterChanged(o snapshot) bool {
	if e.DeadLetter == nil || !o.hasDL {
		return (e.DeadLetter == nil) != !o.hasDL
	}
	d := *e.DeadLetter
	return d.Reason != o.dl.Reason || d.FailedAt != o.dl.FailedAt || d.OriginalQueue != o.dl.OriginalQueue ||
		d.Attempts != o.dl.Attempts || d.Lang != o.dl.Lang || !o.dlErr.equal(d.Error) || !o.dlExc.equal(d.Exception)
}

// patch rewrites the changed fields of a decoded envelope in its received
// bytes.
func (e *Envelope) patch() ([]byte, error) {
	o, jobKey, err := e.original()
	if err != nil {
		return nil, fmt.Errorf("babelqueue: re-encoding a decoded envelope: %w", err)
	}
	b := []byte(e.src)
	set := func(key string, val []byte) {
		if err != nil {
			return
		}
		var l objLayout
		if l, err = locateTop(b, key); err == nil {
			b = withMember(b, l, key, val)
		}
	}
	if e.Job != o.job {
		set(jobKey, appendJSONString(nil, e.Job))
	}
	if e.TraceID != o.traceID {
		set(keyTraceID, appendJSONString(nil, e.TraceID))
	}
	if e.Meta != o.meta && err == nil {
		b, err = e.patchMeta(b, o.meta)
	}
	if e.Attempts != o.attempts {
		set(keyAttempts, strconv.AppendInt(nil, int64(e.Attempts), 10))
	}
	if e.deadLetterChanged(o) && err == nil {
		if e.DeadLetter == nil {
			var l objLayout
			if l, err = locateTop(b, keyDeadLetter); err == nil {
				b = withoutMember(b, l)
			}
		} else {
			b, err = setDeadLetterBlock(b, *e.DeadLetter)
		}
	}
	if e.dropped&dropForbidden != 0 && err == nil {
		// Decode dropped them: the envelope does not carry them on.
		b, err = withoutForbidden(b, e.dropped)
	}
	if err != nil {
		// The received bytes were validated by Decode, so this is a bug.
		return nil, fmt.Errorf("babelqueue: re-encoding a decoded envelope: %w", err)
	}
	return b, nil
}

// patchMeta rewrites the changed meta fields inside the meta object of b.
func (e *Envelope) patchMeta(b []byte, o Meta) ([]byte, error) {
	top, err := locateTop(b, keyMeta)
	if err != nil {
		return nil, err
	}
	if !top.found || b[top.m.valStart] != '{' {
		return nil, syntaxErr(0, "meta is not an object")
	}
	meta := b[top.m.valStart:top.m.valEnd]
	edit := func(key string, val []byte) {
		if err != nil {
			return
		}
		var l objLayout
		if l, err = locate(meta, 0, key); err == nil {
			meta = withMember(meta, l, key, val)
		}
	}
	if e.Meta.ID != o.ID {
		edit("id", appendJSONString(nil, e.Meta.ID))
	}
	if e.Meta.Queue != o.Queue {
		edit("queue", appendJSONString(nil, e.Meta.Queue))
	}
	if e.Meta.Lang != o.Lang {
		edit("lang", appendJSONString(nil, e.Meta.Lang))
	}
	if e.Meta.CreatedAt != o.CreatedAt {
		edit("created_at", strconv.AppendInt(nil, e.Meta.CreatedAt, 10))
	}
	if err != nil {
		return nil, err
	}
	return splice(b, top.m.valStart, top.m.valEnd, meta), nil
}
