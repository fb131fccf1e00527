package wire

import (
	"errors"
	"strconv"
)

// BodyClass is what a consumer does with a body (CONTRACT.md 2.6–2.7).
type BodyClass int

const (
	// ClassAccepted: the body is an envelope a handler may receive.
	ClassAccepted BodyClass = iota + 1
	// ClassPoison: the body is not a conformant envelope (never retried
	// when dead-lettering is on).
	ClassPoison
	// ClassUnsupportedVersion: meta.schema_version is not 1 (version-gated,
	// never retried).
	ClassUnsupportedVersion
)

// String returns "accepted", "poison" or "unsupported_version".
func (c BodyClass) String() string {
	switch c {
	case ClassAccepted:
		return "accepted"
	case ClassPoison:
		return "poison"
	case ClassUnsupportedVersion:
		return "unsupported_version"
	}
	return "BodyClass(" + strconv.Itoa(int(c)) + ")"
}

// ClassifyBody applies the acceptance rule to body. It returns ClassAccepted
// and nil, or ClassPoison / ClassUnsupportedVersion with the error Accepts
// returns (wrapping ErrPoison / ErrUnsupportedSchemaVersion).
func ClassifyBody(body []byte) (BodyClass, error) {
	err := Accepts(body)
	switch {
	case err == nil:
		return ClassAccepted, nil
	case errors.Is(err, ErrUnsupportedSchemaVersion):
		return ClassUnsupportedVersion, err
	default:
		return ClassPoison, err
	}
}
