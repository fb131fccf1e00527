package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// ErrForbiddenKey matches an envelope key a producer may not write. That
// is a core meta key given as a producer meta entry, or one of the keys
// the BabelQueue family retired (see ForbiddenKeys). Its errors are
// *EnvelopeKeyError values.
var ErrForbiddenKey = errors.New("babelqueue: reserved or forbidden envelope key")

// EnvelopeKeyError is a refused envelope key, named by its JSON pointer
// (RFC 6901, "/meta/ts"). It matches ErrForbiddenKey and
// ErrInvalidEnvelope.
type EnvelopeKeyError struct {
	Pointer string
	Why     string
}

func (e *EnvelopeKeyError) Error() string {
	return "babelqueue: envelope key " + e.Pointer + ": " + e.Why
}

// Is matches ErrForbiddenKey and ErrInvalidEnvelope.
func (e *EnvelopeKeyError) Is(target error) bool {
	return target == ErrForbiddenKey || target == ErrInvalidEnvelope
}

// CoreMetaKeys are the meta keys the codec owns; a producer meta entry may
// not use them.
var CoreMetaKeys = []string{"id", "queue", "lang", "schema_version", "created_at"}

// ForbiddenKeys are the JSON pointers of the keys no SDK writes any more.
// A body that carries one is decoded with the key dropped (see
// Envelope.DroppedKeys), and Make never writes one.
var ForbiddenKeys = []string{"/timestamp", "/meta/max_retries", "/meta/attempts", "/meta/source", "/meta/ts"}

// Bits of Envelope.dropped, in the order of ForbiddenKeys, then the urn
// alias.
const (
	dropTimestamp uint8 = 1 << iota
	dropMaxRetries
	dropMetaAttempts
	dropSource
	dropTS
	dropURN // a urn beside a valid job: ignored (reported, never removed)

	dropForbidden = dropTimestamp | dropMaxRetries | dropMetaAttempts | dropSource | dropTS
)

// forbiddenMetaBit returns the drop bit of a forbidden meta key, or 0.
func forbiddenMetaBit(key string) uint8 {
	switch key {
	case "max_retries":
		return dropMaxRetries
	case "attempts":
		return dropMetaAttempts
	case "source":
		return dropSource
	case "ts":
		return dropTS
	}
	return 0
}

// jsonPointer returns the RFC 6901 pointer of key inside container ("" for
// the top level).
func jsonPointer(container, key string) string {
	key = strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
	if container == "" {
		return "/" + key
	}
	return "/" + container + "/" + key
}

// checkMetaKey refuses a producer meta key that is a core or forbidden one.
func checkMetaKey(key string) error {
	for _, k := range CoreMetaKeys {
		if key == k {
			return &EnvelopeKeyError{Pointer: jsonPointer("meta", key), Why: "a core meta key is set by the codec, not by the producer"}
		}
	}
	if forbiddenMetaBit(key) != 0 {
		return &EnvelopeKeyError{Pointer: jsonPointer("meta", key), Why: "the key is forbidden in new envelopes"}
	}
	return nil
}

// metaEntry is one producer meta entry of Make.
type metaEntry struct {
	key string
	raw []byte // JSON value; nil for the ext entry until built
}

// WithMeta adds the entry key: value to meta, beside the core keys
// (CONTRACT.md 2.9); value is encoded as encoding/json does, without HTML
// escaping. Entries are written after created_at in the order given; a key
// given again replaces the earlier value in its place. A core meta key
// (id, queue, lang, schema_version, created_at) or a forbidden one
// (max_retries, attempts, source, ts) makes Make fail with an
// *EnvelopeKeyError naming the pointer ("/meta/ts"). Prefer WithMetaExt,
// which keeps vendor entries under meta.ext.
func WithMeta(key string, value any) MakeOption {
	return func(c *makeConfig) {
		if c.err != nil {
			return
		}
		if err := checkMetaKey(key); err != nil {
			c.err = err
			return
		}
		if key == "ext" && c.extAt > 0 {
			c.err = &EnvelopeKeyError{Pointer: "/meta/ext", Why: "given both by WithMeta and WithMetaExt"}
			return
		}
		raw, err := metaValue(value)
		if err != nil {
			c.err = fmt.Errorf("babelqueue: meta entry %s: %w", jsonPointer("meta", key), err)
			return
		}
		c.setMeta(key, raw)
	}
}

// WithMetaExt adds vendor: value to the meta.ext object, the recommended
// place of producer metadata. The object is created at its first use, and
// a vendor given again replaces its value. It conflicts with a
// WithMeta("ext", ...) of the same Make.
func WithMetaExt(vendor string, value any) MakeOption {
	return func(c *makeConfig) {
		if c.err != nil {
			return
		}
		raw, err := metaValue(value)
		if err != nil {
			c.err = fmt.Errorf("babelqueue: meta entry %s/%s: %w", "/meta/ext", jsonPointer("", vendor)[1:], err)
			return
		}
		if c.extAt == 0 {
			for _, e := range c.meta {
				if e.key == "ext" {
					c.err = &EnvelopeKeyError{Pointer: "/meta/ext", Why: "given both by WithMeta and WithMetaExt"}
					return
				}
			}
			c.meta = append(c.meta, metaEntry{key: "ext"})
			c.extAt = len(c.meta)
		}
		for i := range c.ext {
			if c.ext[i].key == vendor {
				c.ext[i].raw = raw
				return
			}
		}
		c.ext = append(c.ext, metaEntry{key: vendor, raw: raw})
	}
}

func (c *makeConfig) setMeta(key string, raw []byte) {
	for i := range c.meta {
		if c.meta[i].key == key {
			c.meta[i].raw = raw
			return
		}
	}
	c.meta = append(c.meta, metaEntry{key: key, raw: raw})
}

// metaValue returns the compact JSON of v.
func metaValue(v any) ([]byte, error) {
	switch r := v.(type) {
	case json.RawMessage:
		if !ValidJSONValue(r) {
			return nil, fmt.Errorf("%w: raw value is not JSON", ErrInvalidEnvelope)
		}
		return compactJSON(r)
	}
	d := dataEncoders.Get().(*dataEncoder)
	defer func() {
		d.buf.Reset()
		dataEncoders.Put(d)
	}()
	if err := d.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEnvelope, err)
	}
	out := d.buf.Bytes()
	out = out[:len(out)-1] // the encoder's newline
	return appendUnescapedSeparators(nil, out), nil
}

func compactJSON(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEnvelope, err)
	}
	return buf.Bytes(), nil
}

// metaExtraJSON returns the producer entries of c as `,"k":v...`, or "",
// and the JSON of meta.ext within it, or "".
func (c *makeConfig) metaExtraJSON() (extra, ext string) {
	if len(c.meta) == 0 {
		return "", ""
	}
	extStart, extEnd := 0, 0
	var out []byte
	for i, e := range c.meta {
		out = append(out, ',')
		out = appendJSONString(out, e.key)
		out = append(out, ':')
		if i+1 == c.extAt {
			extStart = len(out)
			out = append(out, '{')
			for j, x := range c.ext {
				if j > 0 {
					out = append(out, ',')
				}
				out = appendJSONString(out, x.key)
				out = append(out, ':')
				out = append(out, x.raw...)
			}
			out = append(out, '}')
			extEnd = len(out)
			continue
		}
		out = append(out, e.raw...)
	}
	extra = unsafe.String(unsafe.SliceData(out), len(out))
	if extEnd > 0 {
		ext = extra[extStart:extEnd]
	} else {
		for _, e := range c.meta {
			if e.key == "ext" {
				ext = string(e.raw)
			}
		}
	}
	return extra, ext
}

// MetaExt returns the raw JSON of meta.ext (the producer extension
// metadata), or nil when meta has no ext entry. For a decoded envelope it
// was located when the body was decoded, so reading it decodes nothing
// again; the slice is a fresh copy.
func (e *Envelope) MetaExt() json.RawMessage {
	if e.ext == "" {
		return nil
	}
	return json.RawMessage(e.ext)
}

// MetaValue returns the raw JSON of the meta entry key, core keys and
// producer entries alike. ok is false when meta has none, and always for
// a forbidden key, which was dropped when the body was decoded.
func (e *Envelope) MetaValue(key string) (raw json.RawMessage, ok bool) {
	if forbiddenMetaBit(key) != 0 {
		return nil, false
	}
	var meta []byte
	if e.src != "" {
		p, err := parse(unsafe.Slice(unsafe.StringData(e.src), len(e.src)))
		if err != nil {
			return nil, false
		}
		meta = []byte(e.src[p.meta.start:p.meta.end])
	} else {
		meta = e.appendFresh(nil)
		l, err := locateTop(meta, keyMeta)
		if err != nil || !l.found {
			return nil, false
		}
		meta = meta[l.m.valStart:l.m.valEnd]
	}
	l, err := locate(meta, 0, key)
	if err != nil || !l.found {
		return nil, false
	}
	return json.RawMessage(meta[l.m.valStart:l.m.valEnd]), true
}

// DroppedKeys returns the JSON pointers of the keys of the received body
// that its envelope ignores. Those are the forbidden keys (ForbiddenKeys)
// and a urn alias beside a valid job, in that order; the result is nil for
// most bodies and for an envelope built by Make. Encode leaves the forbidden keys out; the App
// reports a delivery that carries one through its warning hook.
func (e *Envelope) DroppedKeys() []string {
	if e.dropped == 0 {
		return nil
	}
	var out []string
	for i, p := range ForbiddenKeys {
		if e.dropped&(1<<i) != 0 {
			out = append(out, p)
		}
	}
	if e.dropped&dropURN != 0 {
		out = append(out, "/urn")
	}
	return out
}

// withoutForbidden returns b (a validated body) without any member named
// by a forbidden key, every occurrence removed.
func withoutForbidden(b []byte, dropped uint8) ([]byte, error) {
	if dropped&dropTimestamp != 0 {
		for {
			l, err := locateTop(b, "timestamp")
			if err != nil {
				return nil, err
			}
			if !l.found {
				break
			}
			b = withoutMember(b, l)
		}
	}
	if dropped&(dropForbidden&^dropTimestamp) == 0 {
		return b, nil
	}
	top, err := locateTop(b, keyMeta)
	if err != nil {
		return nil, err
	}
	if !top.found || b[top.m.valStart] != '{' {
		return b, nil
	}
	meta := b[top.m.valStart:top.m.valEnd]
	for _, k := range [...]string{"max_retries", "attempts", "source", "ts"} {
		for {
			l, err := locate(meta, 0, k)
			if err != nil {
				return nil, err
			}
			if !l.found {
				break
			}
			meta = withoutMember(meta, l)
		}
	}
	return splice(b, top.m.valStart, top.m.valEnd, meta), nil
}

// ErrDroppedKeys matches a *DroppedKeysError.
var ErrDroppedKeys = errors.New("babelqueue: envelope keys ignored")

// DroppedKeysError reports the keys of a received body that its envelope
// ignores, as Envelope.DroppedKeys lists them. The App passes it to its
// warning hook and handles the message as usual. It matches ErrDroppedKeys.
type DroppedKeysError struct {
	// Pointers are the JSON pointers of the keys ("/timestamp",
	// "/meta/ts", "/urn").
	Pointers []string
}

func (e *DroppedKeysError) Error() string {
	return "envelope keys ignored: " + strings.Join(e.Pointers, ", ")
}

// Is matches ErrDroppedKeys.
func (e *DroppedKeysError) Is(target error) bool { return target == ErrDroppedKeys }

// CheckOutbound returns an *EnvelopeKeyError naming the first key of body
// that no producer may write (CONTRACT.md 2.10). It checks the forbidden
// keys in the order of ForbiddenKeys, then the inbound alias urn. It returns
// nil for a body without one, and Decode's error for a body that is not an
// envelope. A tool that publishes whole envelopes as given checks them
// with it; Make never writes those keys.
func CheckOutbound(body []byte) error {
	p, err := parse(body)
	if err != nil {
		return err
	}
	for i, ptr := range ForbiddenKeys {
		if p.dropped&(1<<i) != 0 {
			return &EnvelopeKeyError{Pointer: ptr, Why: "the key is forbidden in new envelopes"}
		}
	}
	if l, err := locateTop(body, keyURN); err == nil && l.found {
		return &EnvelopeKeyError{Pointer: "/urn", Why: "urn is an inbound alias of job; producers write job"}
	}
	return nil
}
