package option

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type cfg struct {
	n    int
	d    time.Duration
	p    *int
	name string
	errs Errors
}

type opt func(*cfg)

func TestApplyRecordsEveryProblemWithThePrefix(t *testing.T) {
	c := cfg{errs: Prefixed("mod")}
	var nilPtr *int
	err := Apply(&c, &c.errs, []opt{
		func(c *cfg) { Positive(&c.errs, &c.n, "size", 0) },
		nil,
		func(c *cfg) { NonNil(&c.errs, &c.p, "pointer", nilPtr) },
		func(c *cfg) { Identifier(&c.errs, &c.name, "table name", "x; drop") },
	})
	if !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("err = %v, want ErrInvalidOption", err)
	}
	want := []string{
		"mod: babelqueue: invalid option: size 0 is not positive",
		"mod: babelqueue: invalid option: nil option",
		"mod: babelqueue: invalid option: nil pointer",
		`mod: babelqueue: invalid option: table name "x; drop" is not a plain identifier`,
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Fatalf("err =\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if c.n != 0 || c.p != nil || c.name != "" {
		t.Fatalf("a rejected value was set: %+v", c)
	}
}

func TestApplySetsGoodValues(t *testing.T) {
	var c cfg
	x := 1
	err := Apply(&c, &c.errs, []opt{
		func(c *cfg) { Positive(&c.errs, &c.n, "size", 3) },
		func(c *cfg) { Positive(&c.errs, &c.d, "wait", time.Second) },
		func(c *cfg) { NonNil(&c.errs, &c.p, "pointer", &x) },
		func(c *cfg) { Identifier(&c.errs, &c.name, "table name", "bq_T1") },
	})
	if err != nil || c.n != 3 || c.d != time.Second || c.p != &x || c.name != "bq_T1" {
		t.Fatalf("err %v, config %+v", err, c)
	}
}

func TestInvalidWithoutPrefix(t *testing.T) {
	err := Invalid("", "clock is %s", "nil")
	if err.Error() != "babelqueue: invalid option: clock is nil" || !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("err = %v", err)
	}
}

func TestPlainIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"a": true, "_": true, "bq_outbox": true, "T9_x": true,
		"": false, "9a": false, "a-b": false, "a b": false, "é": false, "a.b": false, `a"`: false,
	} {
		if got := PlainIdentifier(s); got != want {
			t.Errorf("PlainIdentifier(%q) = %v, want %v", s, got, want)
		}
	}
}
