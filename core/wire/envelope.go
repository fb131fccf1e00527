package wire

import (
	"encoding/json"
	"fmt"
)

// Lang is the meta.lang and dead_letter.lang value this SDK writes.
const Lang = "go"

// Meta is the meta object of an envelope.
type Meta struct {
	// ID is the message id (a UUID v4 from Make), unique per message: the
	// idempotency key.
	ID string
	// Queue is the logical queue name the message was published to.
	Queue string
	// Lang is the language of the producing SDK ("go" for Make).
	Lang string
	// SchemaVersion is the envelope schema version; always SchemaVersion
	// (1) on an envelope that Make built or Decode accepted.
	SchemaVersion int
	// CreatedAt is the creation time in Unix epoch milliseconds (UTC).
	CreatedAt int64
}

// Envelope is the canonical BabelQueue message (CONTRACT.md 2).
//
// An Envelope comes from Make (a new message) or from Decode (a received
// body). A decoded envelope remembers the bytes it was decoded from: Encode
// writes them back unchanged except for the exported fields the caller
// changed, so unknown keys, key order, spacing and number spellings survive.
//
// The data payload is kept as raw JSON and is only decoded when the handler
// asks for it (DataMap or BindData), so routing a message never pays for it.
//
// No method modifies the envelope: concurrent calls are safe as long as no
// goroutine writes its exported fields at the same time.
type Envelope struct {
	// Job is the message URN (the body's job key, or its urn alias).
	Job string
	// TraceID is the correlation id carried unchanged on every hop.
	TraceID string
	// Meta is the meta object.
	Meta Meta
	// Attempts is the contract's retry counter: on a delivery, how many
	// earlier deliveries failed and were retried (0 on the first).
	//
	// A delivery repeated without a retry (a crash before the acknowledge, a
	// hand-back) is not counted. In a dead letter it is the number of
	// deliveries counted, the last included, equal to DeadLetter.Attempts.
	// Logs and hooks say "deliveries" for this counter plus one: the
	// delivery in hand included.
	Attempts int
	// DeadLetter is the dead_letter block of a dead-lettered message, or nil.
	DeadLetter *DeadLetter

	data      string // raw JSON object of data ("" means {})
	src       string // the received body; "" for an envelope built by Make
	ext       string // raw JSON of meta.ext; "" for none
	metaExtra string // the producer meta entries of a new envelope: `,"k":v...`
	dropped   uint8  // the keys Decode ignored (see DroppedKeys)
}

// snapshot holds the decoded field values of a decoded envelope, so that
// Encode can tell which fields the caller changed (see Envelope.original).
type snapshot struct {
	job, traceID string
	meta         Meta
	attempts     int
	hasDL        bool
	dl           DeadLetter
	dlErr, dlExc nullableString
}

// nullableString is a copied *string.
type nullableString struct {
	set bool
	s   string
}

func copyNullable(p *string) nullableString {
	if p == nil {
		return nullableString{}
	}
	return nullableString{set: true, s: *p}
}

func (n nullableString) equal(p *string) bool {
	if p == nil {
		return !n.set
	}
	return n.set && n.s == *p
}

// URN returns the message URN (the Job field).
func (e *Envelope) URN() string { return e.Job }

// Data returns the raw JSON of data: a compact JSON object for an envelope
// built by Make, the bytes as received for a decoded one. The slice is a
// fresh copy that the caller may keep or modify.
func (e *Envelope) Data() []byte {
	if e.data == "" {
		return []byte("{}")
	}
	return []byte(e.data)
}

// DataMap decodes data into a new map in which every integer keeps its
// digits, as encoding/json does into an `any` with UseNumber. Numbers come
// back as json.Number, so 12345678901234567890 stays exact; nested objects
// are map[string]any and arrays []any. The data was validated when the
// envelope was made or decoded, so the error is always nil today; it is
// kept so that callers handle it should the rules ever tighten.
func (e *Envelope) DataMap() (map[string]any, error) {
	m, ok := treeOf(e.dataJSON()).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("babelqueue: data of %s is not a JSON object", e.Job)
	}
	return m, nil
}

// BindData decodes data into v (a pointer, typically to a struct) with
// encoding/json rules. Use json.Number fields to keep large integers exact.
func (e *Envelope) BindData(v any) error {
	if err := json.Unmarshal([]byte(e.dataJSON()), v); err != nil {
		return fmt.Errorf("babelqueue: binding data of %s: %w", e.Job, err)
	}
	return nil
}

// Raw returns a copy of the body the envelope was decoded from, or nil for
// an envelope built by Make.
func (e *Envelope) Raw() []byte {
	if e.src == "" {
		return nil
	}
	return []byte(e.src)
}

func (e *Envelope) dataJSON() string {
	if e.data == "" {
		return "{}"
	}
	return e.data
}
