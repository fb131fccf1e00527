package babelqueue

import "strings"

// errPrefix starts the text of every error of the module.
const errPrefix = "babelqueue: "

// within returns err after context, as "babelqueue: <context>: <err>".
//
// It drops err's own leading "babelqueue: ", so that the prefix is said
// once; errors.Is and errors.As see err through it.
func within(context string, err error) error {
	return &contextError{text: errPrefix + context + ": " + strings.TrimPrefix(err.Error(), errPrefix), err: err}
}

type contextError struct {
	text string
	err  error
}

func (e *contextError) Error() string { return e.text }
func (e *contextError) Unwrap() error { return e.err }
