// Package option is the plumbing the BabelQueue modules share for their
// functional options: Errors records every value an option rejects, each
// wrapping ErrInvalidOption after the module's prefix, so a constructor
// reports all of them at once (errors.Join); Apply runs a list of options;
// Positive, NonNil and Identifier are the checks several modules make. It
// imports the standard library only, so every BabelQueue package, the user
// package babelqueue included, may import it.
package option

import (
	"errors"
	"fmt"
)

// ErrInvalidOption marks a rejected configuration value. It is the value
// of babelqueue.ErrInvalidOption and driver.ErrInvalidOption: match any of
// them with errors.Is.
var ErrInvalidOption = errors.New("babelqueue: invalid option")

// Errors records the problems options find. The zero value records
// problems without a prefix; Prefixed names the module.
type Errors struct {
	prefix string
	list   []error
}

// Prefixed returns an empty record whose problems start with prefix and
// ": " (for example "outbox").
func Prefixed(prefix string) Errors { return Errors{prefix: prefix} }

// Invalid returns a problem of an option, wrapping ErrInvalidOption. It
// reads "prefix: " when prefix is not empty, then ErrInvalidOption, ": "
// and format filled with args.
func Invalid(prefix, format string, args ...any) error {
	if prefix != "" {
		prefix += ": "
	}
	return fmt.Errorf("%s%w: %s", prefix, ErrInvalidOption, fmt.Sprintf(format, args...))
}

// Fail records a problem, formatted as Invalid does with e's prefix.
func (e *Errors) Fail(format string, args ...any) {
	e.list = append(e.list, Invalid(e.prefix, format, args...))
}

// Add records err as it is (a problem that is not an invalid value).
func (e *Errors) Add(err error) { e.list = append(e.list, err) }

// Err returns every recorded problem, joined (errors.Join); nil when
// there is none.
func (e *Errors) Err() error { return errors.Join(e.list...) }

// Apply calls every option of opts with c, in order, records a nil option
// in e as a problem ("nil option"), and returns e.Err().
func Apply[C any, O ~func(*C)](c *C, e *Errors, opts []O) error {
	for _, o := range opts {
		if o == nil {
			e.Fail("nil option")
			continue
		}
		o(c)
	}
	return e.Err()
}
