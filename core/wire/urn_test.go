package wire

import (
	"errors"
	"testing"
)

func TestValidURN(t *testing.T) {
	for _, ok := range []string{"urn:babel:orders:created", "urn:bq:x", "URN:Babel:Orders", "urn:a:b:c:d-e_f.g"} {
		if err := ValidURN(ok); err != nil {
			t.Errorf("ValidURN(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "not-a-urn", "urn:babel: bad", "urn:", "urn::x", "urn:a::b", "urn:babel:", "urn:x", "urn:babel", "URN:a", "urnx:a:b", " urn:a:b", "urn:a:b\n", "urn:a:b\u00a0c"} {
		err := ValidURN(bad)
		if !errors.Is(err, ErrInvalidURN) {
			t.Errorf("ValidURN(%q) = %v, want ErrInvalidURN", bad, err)
		}
	}
}
