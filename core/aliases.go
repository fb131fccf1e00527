package babelqueue

import (
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// The names below are defined by the packages that own them (wire: the
// envelope and its codec; driver: the binding contract) and are the same
// types here, so that a service needs only this package.
type (
	// Envelope is the canonical message (CONTRACT.md 2); see wire.Envelope.
	Envelope = wire.Envelope
	// Meta is an Envelope's meta block; see wire.Meta.
	Meta = wire.Meta
	// MakeOption sets a field of the Envelope Make builds (wire.WithQueue,
	// wire.WithTraceID, wire.WithID, wire.WithCreatedAt, wire.WithMeta,
	// wire.WithMetaExt).
	MakeOption = wire.MakeOption
	// Transport is the broker binding an App runs on; see driver.Transport.
	Transport = driver.Transport
	// ReceivedMessage is one delivery as a binding hands it to the App;
	// see driver.ReceivedMessage.
	ReceivedMessage = driver.ReceivedMessage
)

// Make returns a new Envelope of job carrying data, which must encode to a
// JSON object; see wire.Make.
func Make(job string, data any, opts ...MakeOption) (*Envelope, error) {
	return wire.Make(job, data, opts...)
}

// Decode parses and validates a body by the consumer rules; see
// wire.Decode. Its errors wrap ErrPoison or ErrUnsupportedSchemaVersion.
func Decode(body []byte) (*Envelope, error) { return wire.Decode(body) }

// WithQueue records queue as the Envelope's meta.queue; see wire.WithQueue.
func WithQueue(queue string) MakeOption { return wire.WithQueue(queue) }

// WithTraceID sets the Envelope's trace id; see wire.WithTraceID.
func WithTraceID(traceID string) MakeOption { return wire.WithTraceID(traceID) }

// WithID sets the Envelope's meta.id; see wire.WithID.
func WithID(id string) MakeOption { return wire.WithID(id) }

// WithCreatedAt sets the Envelope's meta.created_at; see wire.WithCreatedAt.
func WithCreatedAt(t time.Time) MakeOption { return wire.WithCreatedAt(t) }
