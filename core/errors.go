package babelqueue

import (
	"errors"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Sentinel errors. Errors returned by this module and the bindings wrap
// them with context; match them with errors.Is. Most are defined by the
// package that returns them (wire, driver) and are the same values here.
var (
	// ErrPoison marks a body that is not a conformant envelope (CONTRACT.md 2.7).
	ErrPoison = wire.ErrPoison
	// ErrUnsupportedSchemaVersion marks a message whose bq-schema-version
	// header, or whose meta.schema_version, is not 1.
	ErrUnsupportedSchemaVersion = wire.ErrUnsupportedSchemaVersion
	// ErrInvalidData is returned by Make for data that is not a JSON object.
	ErrInvalidData = wire.ErrInvalidData
	// ErrInvalidEnvelope is returned by Encode for an envelope a consumer
	// would not accept.
	ErrInvalidEnvelope = wire.ErrInvalidEnvelope
	// ErrDelayUnsupported is returned by a delayed publish that the binding
	// cannot honour; nothing was written.
	ErrDelayUnsupported = driver.ErrDelayUnsupported
	// ErrNoHandler marks a message whose URN has no registered handler.
	ErrNoHandler = errors.New("babelqueue: no handler for urn")
	// ErrSettle marks a failed retry, dead-letter or acknowledge write: the
	// original message was left unsettled and will be delivered again.
	ErrSettle = driver.ErrSettle
	// ErrClosed is returned by calls on a closed App or transport.
	ErrClosed = driver.ErrClosed
	// ErrTooLarge marks a write the broker can never accept because of its
	// size; nothing was written. A settle write refused this way is
	// replaced by a bounded dead letter (Settlement.Reason "oversize").
	ErrTooLarge = driver.ErrTooLarge
	// ErrInvalidOption marks a rejected configuration value.
	ErrInvalidOption = driver.ErrInvalidOption
	// ErrRedriveBusy is returned by a redrive that found another run
	// holding the dead-letter queue's cursor; it read, wrote and settled
	// nothing. The bindings' own ErrRedriveBusy values match it.
	ErrRedriveBusy = driver.ErrRedriveBusy
	// ErrInvalidURN matches a publish or Handle whose URN breaks the URN
	// rule of the BabelQueue family (see wire.ValidURN). A URN is an
	// argument, so the error does not match ErrInvalidOption.
	ErrInvalidURN = wire.ErrInvalidURN
	// ErrInvalidPayload matches a payload rejected by the App's
	// PayloadValidator.
	ErrInvalidPayload = errors.New("babelqueue: invalid payload")
	// ErrForbiddenKey matches a producer meta entry Make refuses (a core
	// or forbidden meta key); see wire.WithMeta.
	ErrForbiddenKey = wire.ErrForbiddenKey
	// ErrDroppedKeys matches the warning of a delivery whose body carries
	// keys its envelope ignores. The warning is a *wire.DroppedKeysError
	// passed to WithOnWarning; the message is handled as usual.
	ErrDroppedKeys = wire.ErrDroppedKeys
	// ErrDecryptFailed matches a consumed message whose protected fields
	// the App's FieldProtector could not decrypt (Settlement.Reason
	// wire.ReasonDecryptFailed); the protector's own error is wrapped too.
	ErrDecryptFailed = errors.New("babelqueue: protected fields cannot be decrypted")
	// ErrBatchAborted is the error of a batch message that was not written
	// because an earlier message of the same batch failed. A transport that
	// writes one message at a time stops at the first failure, so that no
	// later message overtakes it.
	ErrBatchAborted = errors.New("babelqueue: not written: an earlier message of the batch failed")
	// ErrPublishUnknown marks a publish whose outcome is unknown: the write
	// left the client, but no acknowledgement came back. The connection
	// broke after the request went out, or the wait for the acknowledgement
	// timed out. The message may or may not be stored, and may still be
	// stored after the call returned. A binding wraps it into every such
	// error; a publish error that does not match it means nothing was
	// written.
	//
	// Do not publish the same intent again with Publish: that makes a new
	// envelope with a new meta.id, which no consumer can tell from a second
	// message. Pass the error to App.Republish, which writes the very same
	// envelope (same bytes, same meta.id) again: at worst the message is
	// stored twice under one meta.id, which a consumer deduplicates, and on a
	// binding with broker-side deduplication (Pulsar's WithDeduplication) it
	// is stored once. It is driver.ErrPublishUnknown, the value the
	// bindings wrap.
	ErrPublishUnknown = driver.ErrPublishUnknown
)

// DeliveryError is an error about one delivered message, as reported to
// the OnError and OnWarning hooks.
type DeliveryError struct {
	// Queue is the queue the message was read from.
	Queue string
	// URN is the message's route, empty when the body could not be read.
	URN string
	// MessageID is meta.id, empty when the body could not be read.
	MessageID string
	// Err is what happened.
	Err error
}

// Error describes the message and the error.
func (e *DeliveryError) Error() string {
	s := "babelqueue: queue " + e.Queue
	if e.MessageID != "" {
		s += ", message " + e.MessageID
	}
	if e.URN != "" {
		s += " (" + e.URN + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *DeliveryError) Unwrap() error { return e.Err }
