package wire

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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
	// One pass, no allocation: a publish checks its URN every time. The
	// checks keep their order: a space or control character first, then
	// the scheme, an empty part, too few parts.
	parts, empty, emptyFirst := 0, false, false
	partLen := 0
	for i := 0; i < len(urn); {
		c := urn[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f { // ASCII spaces and controls
				return bad("contains a space or control character")
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(urn[i:])
			if unicode.IsSpace(r) || unicode.IsControl(r) {
				return bad("contains a space or control character")
			}
			i += size
		}
		if c == ':' {
			parts++
			if partLen == 0 && parts > 1 && !empty {
				empty, emptyFirst = true, parts == 2
			}
			partLen = 0
			continue
		}
		partLen++
	}
	scheme, _, ok := strings.Cut(urn, ":")
	if !ok || !strings.EqualFold(scheme, "urn") {
		return bad(`does not start with "urn:"`)
	}
	// parts counts the colons: the parts after the scheme are one more.
	if !empty && partLen == 0 {
		empty, emptyFirst = true, parts == 1
	}
	switch {
	case empty && emptyFirst:
		return bad("the namespace is empty")
	case empty:
		return bad("a part after the namespace is empty")
	case parts < 2:
		return bad("nothing follows the namespace")
	}
	return nil
}
