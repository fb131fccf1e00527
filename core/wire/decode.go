package wire

import (
	"fmt"
	"unsafe"
)

// Top-level and meta keys the codec reads.
const (
	keyJob        = "job"
	keyURN        = "urn"
	keyTraceID    = "trace_id"
	keyData       = "data"
	keyMeta       = "meta"
	keyAttempts   = "attempts"
	keyDeadLetter = "dead_letter"
)

// vspan is the span of one value in a body; ok reports presence.
type vspan struct {
	start, end int
	esc        bool // for a string value: it holds an escape
	ok         bool
}

func spanOf(m member) vspan {
	return vspan{start: m.valStart, end: m.valEnd, esc: m.valEscaped, ok: true}
}

func (v vspan) is(b []byte, c byte) bool { return v.ok && b[v.start] == c }

// parsed is the result of checking a body against the acceptance rule.
type parsed struct {
	job       vspan
	jobKey    string
	traceID   vspan
	data      vspan
	meta      vspan
	id        vspan
	queue     vspan
	lang      vspan
	createdAt int64
	attempts  int
	dl        vspan
	ext       vspan // meta.ext
	dropped   uint8 // see Envelope.dropped
}

// keyBytes returns the unescaped key of m as bytes (no copy when the key has
// no escape).
func keyBytes(b []byte, m member) []byte {
	if !m.keyEscaped {
		return b[m.keyStart+1 : m.keyEnd-1]
	}
	s, _ := unquote(b[m.keyStart:m.keyEnd], true)
	return []byte(s)
}

func poisonf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrPoison}, args...)...)
}

// nonBlankString reports whether v is a JSON string whose value is not
// blank (see IsBlank).
func nonBlankString(b []byte, v vspan) bool {
	if !v.is(b, '"') {
		return false
	}
	if v.esc {
		s, ok := unquote(b[v.start:v.end], true)
		return ok && !IsBlank(s)
	}
	for _, c := range b[v.start+1 : v.end-1] {
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
		default:
			return true
		}
	}
	return false
}

// parse applies the decoding rules to body.
func parse(body []byte) (parsed, error) {
	var p parsed
	open := skipWS(body, 0)
	if open >= len(body) {
		return p, poisonf("empty body")
	}
	if body[open] != '{' {
		if _, err := scanValue(body, open, 1); err != nil {
			return p, poisonf("not JSON: %w", err)
		}
		return p, poisonf("body is JSON but not an object")
	}
	var urn, attempts, version vspan
	it := newObjIter(body, open, 1)
	var m member
	for it.nextKeyInto(&m) {
		key := string(keyBytes(body, m))
		if key == keyMeta {
			// The last meta counts: forget what an earlier one held.
			version, p.id, p.queue, p.lang, p.createdAt, p.ext = vspan{}, vspan{}, vspan{}, vspan{}, 0, vspan{}
			p.dropped &^= dropForbidden &^ dropTimestamp
			if m.valStart < len(body) && body[m.valStart] == '{' {
				// Read meta's members while validating it, instead of
				// validating it as a value and walking it again.
				end, err := parseMeta(body, m.valStart, it.depth+1, &p, &version)
				if err != nil {
					it.fail(err)
					break
				}
				it.valueEnd(&m, end)
				p.meta = spanOf(m)
				continue
			}
		}
		var end int
		var err error
		if m.valStart < len(body) && body[m.valStart] == '"' {
			end, m.valEscaped, err = scanString(body, m.valStart)
		} else {
			end, err = scanValue(body, m.valStart, it.depth+1)
		}
		if err != nil {
			it.fail(err)
			break
		}
		it.valueEnd(&m, end)
		switch key {
		case keyJob:
			p.job = spanOf(m)
		case keyURN:
			urn = spanOf(m)
		case keyTraceID:
			p.traceID = spanOf(m)
		case keyData:
			p.data = spanOf(m)
		case keyMeta:
			p.meta = spanOf(m)
		case keyAttempts:
			attempts = spanOf(m)
		case keyDeadLetter:
			p.dl = spanOf(m)
		case "timestamp":
			p.dropped |= dropTimestamp
		}
	}
	if it.err != nil {
		return p, poisonf("not JSON: %w", it.err)
	}
	if t := skipWS(body, it.end); t != len(body) {
		return p, poisonf("not JSON: %w", syntaxErr(t, "data after the top-level value"))
	}
	if p.meta.is(body, '{') && version.ok && string(body[version.start:version.end]) != "1" {
		return p, &SchemaVersionError{Version: string(body[version.start:version.end]), Source: "body"}
	}

	switch {
	case nonBlankString(body, p.job):
		p.jobKey = keyJob
		if urn.ok {
			p.dropped |= dropURN
		}
	case nonBlankString(body, urn):
		p.job, p.jobKey = urn, keyURN
	default:
		return p, poisonf("job (or urn) is not a non-blank string")
	}
	if !nonBlankString(body, p.traceID) {
		return p, poisonf("trace_id is not a non-blank string")
	}
	if !p.data.is(body, '{') {
		return p, poisonf("data is not an object")
	}
	if !p.meta.is(body, '{') {
		return p, poisonf("meta is not an object")
	}
	if !version.ok {
		return p, poisonf("meta.schema_version is missing")
	}
	if !attempts.ok {
		return p, poisonf("attempts is missing")
	}
	n, ok := parseUint31(body[attempts.start:attempts.end])
	if !ok {
		return p, poisonf("attempts %s is not an integer between 0 and %d", body[attempts.start:attempts.end], MaxAttemptsValue)
	}
	p.attempts = n
	return p, nil
}

// parseMeta validates the meta object that opens at b[open] (depth is its
// nesting level) as scanValue does, and records the spans of its members
// that parse reads; the last occurrence of a key counts. It returns the
// offset just past the object.
func parseMeta(b []byte, open, depth int, p *parsed, version *vspan) (int, error) {
	if depth > maxJSONDepth {
		return open, syntaxErr(open, "nested too deeply")
	}
	mi := newObjIter(b, open, depth)
	var m member
	for mi.nextInto(&m) {
		switch string(keyBytes(b, m)) {
		case "schema_version":
			*version = spanOf(m)
		case "id":
			p.id = spanOf(m)
		case "queue":
			p.queue = spanOf(m)
		case "lang":
			p.lang = spanOf(m)
		case "created_at":
			p.createdAt, _ = parseInt64(b[m.valStart:m.valEnd])
		case "ext":
			p.ext = spanOf(m)
		case "max_retries", "attempts", "source", "ts":
			p.dropped |= forbiddenMetaBit(string(keyBytes(b, m)))
		}
	}
	return mi.end, mi.err
}

// Accepts reports whether a consumer accepts body as an envelope (CONTRACT.md 2.6).
// It returns nil, or an error wrapping ErrPoison (not an envelope) or
// ErrUnsupportedSchemaVersion (a *SchemaVersionError: meta.schema_version
// is not 1). It checks exactly what Decode checks, without building the
// Envelope.
func Accepts(body []byte) error {
	_, err := parse(body)
	return err
}

// Decode reads a received body into an Envelope. Errors wrap ErrPoison or
// ErrUnsupportedSchemaVersion (then they are a *SchemaVersionError).
//
// The rules (CONTRACT.md 2.6, 2.7), in the order they are checked:
//
//  1. The body must be one strict JSON object: valid UTF-8, RFC 8259 syntax,
//     optional surrounding whitespace, at most 10000 levels of nesting.
//     Anything else is poison.
//  2. When meta is an object holding a schema_version that is not the JSON
//     number 1 written exactly as `1` (2, 1.0, "1", null, ...), the body is
//     rejected with ErrUnsupportedSchemaVersion, whatever else it holds: it
//     may be a later schema this SDK does not know. A meta without
//     schema_version is not an envelope of any version: poison.
//  3. job must be a non-blank string; when it is missing or invalid, the
//     inbound alias urn is used if it is a non-blank string. Otherwise
//     poison. trace_id must be a non-blank string, data an object, meta an
//     object, attempts a plain non-negative integer (no sign, fraction,
//     exponent or leading zero) of at most MaxAttemptsValue. Anything else
//     is poison.
//  4. Duplicate keys: as in encoding/json and the JSON readers of the other
//     SDKs, the last occurrence of a key is the one that counts, at the top
//     level, in meta and in dead_letter. The body editors (SetAttempts,
//     AnnotateDeadLetter, ...) likewise change the last occurrence. Earlier
//     occurrences stay in the bytes, untouched.
//  5. meta.id, meta.queue and meta.lang of another type than string, and a
//     meta.created_at that is not an integer, are not rejected (rule 6 of
//     the contract does not require them): the field reads as its zero value
//     and the bytes are kept.
//
// Decode copies body once; the Envelope does not refer to the caller's
// slice. The data payload is not decoded here (see DataMap and BindData).
func Decode(body []byte) (*Envelope, error) {
	p, err := parse(body)
	if err != nil {
		return nil, err
	}
	return newEnvelope(string(body), p), nil
}

// DecodeStringInto decodes src into e, as Decode does, for a caller that
// holds the Envelope in storage of its own. Such a caller is a binding
// decoding ahead of the App. The Envelope refers to src instead of a copy.
// e is overwritten; on an error it is left unset.
func DecodeStringInto(e *Envelope, src string) error { return decodeStringInto(e, src) }

func decodeString(src string) (*Envelope, error) {
	e := new(Envelope)
	if err := decodeStringInto(e, src); err != nil {
		return nil, err
	}
	return e, nil
}

// decodeStringInto is decodeString into an Envelope the caller allocated;
// e is left unchanged on error.
func decodeStringInto(e *Envelope, src string) error {
	// parse only reads its input, and src outlives the call: a read-only
	// view of the string's bytes saves two copies of every delivered body.
	p, err := parse(unsafe.Slice(unsafe.StringData(src), len(src)))
	if err != nil {
		return err
	}
	fillEnvelope(e, src, p)
	return nil
}

// newEnvelope builds the Envelope of the body src that parse accepted as p.
func newEnvelope(src string, p parsed) *Envelope {
	e := new(Envelope)
	fillEnvelope(e, src, p)
	return e
}

// fillEnvelope sets e to the Envelope of the body src that parse accepted
// as p.
func fillEnvelope(e *Envelope, src string, p parsed) {
	*e = Envelope{
		Job:      stringAt(src, p.job),
		TraceID:  stringAt(src, p.traceID),
		Attempts: p.attempts,
		Meta: Meta{
			ID:            stringAt(src, p.id),
			Queue:         stringAt(src, p.queue),
			Lang:          stringAt(src, p.lang),
			SchemaVersion: SchemaVersion,
			CreatedAt:     p.createdAt,
		},
		data:    src[p.data.start:p.data.end],
		src:     src,
		dropped: p.dropped,
	}
	if p.ext.ok {
		e.ext = src[p.ext.start:p.ext.end]
	}
	if p.dl.ok && src[p.dl.start] == '{' {
		e.DeadLetter = parseDeadLetter(unsafe.Slice(unsafe.StringData(src), len(src)), p.dl.start)
	}
}

// original returns the field values e was decoded with, and the key (job
// or urn) that held Job, by decoding its received bytes again. An envelope
// does not keep a copy of them: only Encode of a decoded envelope needs
// them, while every delivery would pay for the copy.
func (e *Envelope) original() (snapshot, string, error) {
	p, err := parse(unsafe.Slice(unsafe.StringData(e.src), len(e.src)))
	if err != nil {
		// Decode accepted these bytes, and parse is deterministic.
		return snapshot{}, "", err
	}
	return snapshotOf(newEnvelope(e.src, p)), p.jobKey, nil
}

// stringAt returns the value of the string token at v in src, or "" when v
// is absent or not a string.
func stringAt(src string, v vspan) string {
	if !v.ok || src[v.start] != '"' {
		return ""
	}
	if !v.esc {
		return src[v.start+1 : v.end-1]
	}
	s, _ := unquote([]byte(src[v.start:v.end]), true)
	return s
}

func snapshotOf(e *Envelope) snapshot {
	s := snapshot{job: e.Job, traceID: e.TraceID, meta: e.Meta, attempts: e.Attempts}
	if e.DeadLetter != nil {
		s.hasDL = true
		s.dl = *e.DeadLetter
		s.dlErr, s.dlExc = copyNullable(e.DeadLetter.Error), copyNullable(e.DeadLetter.Exception)
	}
	return s
}
