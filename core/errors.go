package babelqueue

import "errors"

// Sentinel errors. Errors returned by this module and the bindings wrap them
// with context; match them with errors.Is.
var (
	// ErrPoison marks a body that is not a conformant envelope (SPEC 2.7).
	ErrPoison = errors.New("babelqueue: poison message")
	// ErrUnsupportedSchemaVersion marks a message whose bq-schema-version
	// header, or whose meta.schema_version, is not 1.
	ErrUnsupportedSchemaVersion = errors.New("babelqueue: unsupported schema version")
	// ErrDelayUnsupported is returned by a delayed or tiered publish that the
	// binding cannot honour; nothing was written.
	ErrDelayUnsupported = errors.New("babelqueue: delay not supported")
	// ErrNoHandler marks a message whose URN has no registered handler.
	ErrNoHandler = errors.New("babelqueue: no handler for urn")
	// ErrSettle marks a failed retry, dead-letter or acknowledge write: the
	// original message was left unsettled and will be delivered again.
	ErrSettle = errors.New("babelqueue: message not settled")
	// ErrClosed is returned by calls on a closed App or transport.
	ErrClosed = errors.New("babelqueue: closed")
	// ErrInvalidOption marks a rejected configuration value.
	ErrInvalidOption = errors.New("babelqueue: invalid option")
	// ErrRedriveBusy is returned by a redrive that found another run
	// holding the dead-letter queue's cursor; it read, wrote and settled
	// nothing. The bindings' own ErrRedriveBusy values match it.
	ErrRedriveBusy = errors.New("babelqueue: another redrive holds the cursor")
)
