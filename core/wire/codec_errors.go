package wire

import (
	"errors"
	"strconv"
)

// Sentinel errors of the envelope codec. Errors returned by the codec wrap
// them; match with errors.Is.
var (
	// ErrPoison marks a body that is not a conformant envelope (CONTRACT.md 2.7).
	ErrPoison = errors.New("babelqueue: poison message")
	// ErrUnsupportedSchemaVersion marks a message whose bq-schema-version
	// header, or whose meta.schema_version, is not 1.
	ErrUnsupportedSchemaVersion = errors.New("babelqueue: unsupported schema version")
	// ErrInvalidData is returned by Make when the data does not encode to a
	// JSON object.
	ErrInvalidData = errors.New("babelqueue: data is not a JSON object")
	// ErrInvalidEnvelope is returned by Encode for an envelope a consumer
	// would not accept, so Encode never writes a body that Decode rejects.
	// Such an envelope has a blank job or trace id, negative attempts, or a
	// schema version other than 1. The body editors return it for a
	// negative attempts value.
	ErrInvalidEnvelope = errors.New("babelqueue: invalid envelope")
)

// SchemaVersionError is the error for a message whose schema version is not
// the one this SDK reads. The version is the bq-schema-version header
// (Source "header") or the body's meta.schema_version (Source "body"). It
// wraps ErrUnsupportedSchemaVersion.
type SchemaVersionError struct {
	// Version is the rejected value as it appeared: the header text, or the
	// JSON text of meta.schema_version.
	Version string
	// Source is "header" or "body".
	Source string
}

// Error names the rejected version and where it was read.
func (e *SchemaVersionError) Error() string {
	return ErrUnsupportedSchemaVersion.Error() + ": " + e.Source + " schema version " + strconv.Quote(e.Version) +
		" (supported: " + strconv.Itoa(SchemaVersion) + ")"
}

// Unwrap returns ErrUnsupportedSchemaVersion.
func (e *SchemaVersionError) Unwrap() error { return ErrUnsupportedSchemaVersion }
