package wire

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrInvalidURN is matched by the error of ValidURN.
var ErrInvalidURN = errors.New("babelqueue: invalid URN")

// ValidURN checks urn against the URN rule of the BabelQueue family,
// "urn:<namespace>:<name>[:<name>...]"; the error wraps ErrInvalidURN and
// says why. The rule asks for the "urn" scheme in any case, a namespace
// that is not empty, at least one part after it, no empty part, and no
// space or control character anywhere. So "urn:babel:orders:created" is
// valid; "not-a-urn", "urn:babel", "urn:babel: bad" and "urn:babel:" are
// not.
func ValidURN(urn string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s (want urn:<namespace>:<name>)", ErrInvalidURN, urn, why)
	}
	for _, r := range urn {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return bad("contains a space or control character")
		}
	}
	scheme, rest, ok := strings.Cut(urn, ":")
	if !ok || !strings.EqualFold(scheme, "urn") {
		return bad(`does not start with "urn:"`)
	}
	parts := strings.Split(rest, ":")
	for i, part := range parts {
		if part == "" && i == 0 {
			return bad("the namespace is empty")
		}
		if part == "" {
			return bad("a part after the namespace is empty")
		}
	}
	if len(parts) < 2 {
		return bad("nothing follows the namespace")
	}
	return nil
}
