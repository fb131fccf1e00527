package wire

import (
	"errors"
	"strings"
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

// TestValidURNSaysWhy: each rule names itself, the first broken one in the
// order space, scheme, empty part, too few parts; a valid URN costs no
// allocation (every publish checks one).
func TestValidURNSaysWhy(t *testing.T) {
	for urn, why := range map[string]string{
		"urn:a:b\u0085":  "space or control",
		"urn:a:b\x7f":    "space or control",
		"urn:\tx:y":      "space or control",
		"urx:a:b":        `does not start with "urn:"`,
		"urn":            `does not start with "urn:"`,
		"urn::b":         "the namespace is empty",
		"urn:":           "the namespace is empty",
		"urn:a::b":       "a part after the namespace is empty",
		"urn:a:b:":       "a part after the namespace is empty",
		"urn:é":          "nothing follows the namespace",
		"urn:a:\xff:b":   "",
		"urn:é:ü:名前":     "",
		"URN:Babel:Dots": "",
	} {
		err := ValidURN(urn)
		switch {
		case why == "" && err != nil:
			t.Errorf("ValidURN(%q) = %v, want nil", urn, err)
		case why != "" && (err == nil || !strings.Contains(err.Error(), why)):
			t.Errorf("ValidURN(%q) = %v, want it to say %q", urn, err, why)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = ValidURN("urn:babel:orders:created") }); n != 0 {
		t.Errorf("ValidURN of a valid URN allocates %v times", n)
	}
}
