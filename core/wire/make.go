package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// MakeOption sets one field of an envelope built by Make.
//
// Defaults, when an option is absent (or given a blank value):
//
//	meta.id        NewID() (a UUID v4)
//	trace_id       NewID() (a new trace)
//	meta.queue     "" (the App sets the queue it publishes to)
//	meta.created_at  time.Now(), in Unix milliseconds
type MakeOption func(*makeConfig)

type makeConfig struct {
	queue, traceID, id string
	createdAt          time.Time
	meta               []metaEntry // producer meta entries (WithMeta, WithMetaExt)
	ext                []metaEntry // the entries of meta.ext (WithMetaExt)
	extAt              int         // 1 + the index of the ext entry in meta; 0 for none
	err                error       // the first refused option
}

// WithQueue sets meta.queue.
func WithQueue(queue string) MakeOption { return func(c *makeConfig) { c.queue = queue } }

// WithTraceID continues an existing trace: trace_id is set to traceID
// instead of a new UUID. A blank traceID is ignored (a new trace is minted).
func WithTraceID(traceID string) MakeOption { return func(c *makeConfig) { c.traceID = traceID } }

// WithID sets meta.id instead of a new UUID. A blank id is ignored.
func WithID(id string) MakeOption { return func(c *makeConfig) { c.id = id } }

// WithCreatedAt sets meta.created_at (stored in Unix milliseconds). A zero
// time is ignored (the current time is used).
func WithCreatedAt(t time.Time) MakeOption { return func(c *makeConfig) { c.createdAt = t } }

// Make builds a new envelope for job with attempts 0, meta.lang "go" and
// meta.schema_version 1 (see MakeOption for the other defaults).
//
// data becomes the data object. It may be a map, a struct (or a pointer to
// one), anything else encoding/json encodes as a JSON object, or the raw
// bytes of a JSON object as json.RawMessage or []byte (validated and
// compacted). nil, a nil map, a nil pointer and a nil json.RawMessage or
// []byte give the empty object {}; a non-nil empty []byte is not a JSON
// object.
// Data that is not a JSON object fails with an error wrapping
// ErrInvalidData; a blank job fails with ErrInvalidEnvelope.
func Make(job string, data any, opts ...MakeOption) (*Envelope, error) {
	if IsBlank(job) {
		return nil, fmt.Errorf("%w: job is blank", ErrInvalidEnvelope)
	}
	// The options see c through a pointer, so it lives on the heap; it
	// shares one allocation with the envelope.
	m := new(madeEnvelope)
	m.cfg.apply(opts)
	if err := m.cfg.err; err != nil {
		return nil, fmt.Errorf("babelqueue: making %s: %w", job, err)
	}
	raw, err := encodeData(data)
	if err != nil {
		return nil, within("making "+job, err)
	}
	switch traceBlank, idBlank := IsBlank(m.cfg.traceID), IsBlank(m.cfg.id); {
	case traceBlank && idBlank:
		m.cfg.traceID, m.cfg.id = newIDPair()
	case traceBlank:
		m.cfg.traceID = NewID()
	case idBlank:
		m.cfg.id = NewID()
	}
	m.cfg.fill(&m.env, job, raw)
	return &m.env, nil
}

// apply runs opts on c.
func (c *makeConfig) apply(opts []MakeOption) {
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
}

// fill sets env to the new envelope of job with data raw and the settings
// of c (its ids already set), then clears c: the envelope holds its own
// strings.
func (c *makeConfig) fill(env *Envelope, job, raw string) {
	if c.createdAt.IsZero() {
		c.createdAt = time.Now()
	}
	extra, ext := c.metaExtraJSON()
	*env = Envelope{
		Job:     job,
		TraceID: c.traceID,
		Meta: Meta{
			ID:            c.id,
			Queue:         c.queue,
			Lang:          Lang,
			SchemaVersion: SchemaVersion,
			CreatedAt:     c.createdAt.UnixMilli(),
		},
		data:      raw,
		metaExtra: extra,
		ext:       ext,
	}
	*c = makeConfig{}
}

// madeEnvelope is the one allocation of Make: the envelope and the
// settings its options wrote.
type madeEnvelope struct {
	env Envelope
	cfg makeConfig
}

// dataEncoder is a pooled JSON encoder that does not escape HTML.
type dataEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var dataEncoders = sync.Pool{New: func() any {
	d := &dataEncoder{}
	d.enc = json.NewEncoder(&d.buf)
	d.enc.SetEscapeHTML(false)
	return d
}}

// encodeData returns the compact JSON object of data.
func encodeData(data any) (string, error) {
	switch v := data.(type) {
	case nil:
		return "{}", nil
	case json.RawMessage:
		if v == nil {
			return "{}", nil
		}
		return rawObject(v)
	case []byte:
		if v == nil {
			return "{}", nil
		}
		return rawObject(v)
	}
	if rv := reflect.ValueOf(data); (rv.Kind() == reflect.Map || rv.Kind() == reflect.Pointer) && rv.IsNil() {
		return "{}", nil
	}
	switch data.(type) {
	case map[string]any, map[string]string:
		// The common payload shapes skip reflection; anything the fast
		// path does not handle goes through encoding/json below.
		if out, ok := appendDataValue(make([]byte, 0, 256), data, 0); ok {
			return string(out), nil
		}
	}
	out, err := appendDataJSON(nil, data)
	if err != nil {
		return "", err
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), nil // out is this string's own
}

// appendData appends the compact JSON object of data, as encodeData
// returns it, to dst (dst unchanged on error).
func appendData(dst []byte, data any) ([]byte, error) {
	switch v := data.(type) {
	case nil:
		return append(dst, "{}"...), nil
	case json.RawMessage, []byte:
		s, err := encodeData(v)
		if err != nil {
			return dst, err
		}
		return append(dst, s...), nil
	}
	if rv := reflect.ValueOf(data); (rv.Kind() == reflect.Map || rv.Kind() == reflect.Pointer) && rv.IsNil() {
		return append(dst, "{}"...), nil
	}
	switch data.(type) {
	case map[string]any, map[string]string:
		if out, ok := appendDataValue(dst, data, 0); ok {
			return out, nil
		}
	}
	return appendDataJSON(dst, data)
}

// appendDataJSON appends data encoded by encoding/json (HTML escaping
// off, U+2028 and U+2029 raw, no trailing newline) to dst; it fails with ErrInvalidData when the
// result is not a JSON object.
func appendDataJSON(dst []byte, data any) ([]byte, error) {
	d := dataEncoders.Get().(*dataEncoder)
	defer func() {
		if d.buf.Cap() <= 64<<10 { // do not keep huge buffers alive
			d.buf.Reset()
			dataEncoders.Put(d)
		}
	}()
	if err := d.enc.Encode(data); err != nil {
		return dst, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	out := bytes.TrimRight(d.buf.Bytes(), "\n")
	if len(out) == 0 || out[0] != '{' {
		return dst, fmt.Errorf("%w: %T encodes to %.40s", ErrInvalidData, data, out)
	}
	return appendUnescapedSeparators(dst, out), nil
}

// appendUnescapedSeparators appends the JSON text src (output of
// encoding/json) to dst with every \u2028 and \u2029 escape written as the
// raw character, as appendJSONString and the other SDKs write them;
// encoding/json always escapes the two. Every other byte is copied as is.
func appendUnescapedSeparators(dst, src []byte) []byte {
	for {
		i := bytes.IndexByte(src, '\\')
		if i < 0 {
			return append(dst, src...)
		}
		// Outside strings encoding/json writes no backslash, so each one
		// starts an escape; \\ is skipped whole.
		if i+6 <= len(src) && src[i+1] == 'u' && string(src[i+2:i+5]) == "202" && (src[i+5] == '8' || src[i+5] == '9') {
			dst = append(dst, src[:i]...)
			dst = append(dst, 0xe2, 0x80, 0xa8+src[i+5]-'8') // UTF-8 of U+2028 / U+2029
			src = src[i+6:]
			continue
		}
		end := min(i+2, len(src))
		dst = append(dst, src[:end]...)
		src = src[end:]
	}
}

// rawObject validates raw as one JSON object and returns it compacted.
func rawObject(raw []byte) (string, error) {
	open, end, err := scanTopObject(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	obj := raw[open:end]
	if bytes.ContainsAny(obj, " \t\r\n") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, obj); err != nil {
			return "", fmt.Errorf("%w: %w", ErrInvalidData, err)
		}
		return buf.String(), nil
	}
	return string(obj), nil
}
