package wire

import "strings"

// prefix starts the text of every sentinel error of the module.
const prefix = "babelqueue: "

// within returns err after context, as "babelqueue: <context>: <err>".
//
// It drops err's own leading "babelqueue: ", so that the prefix is said
// once; errors.Is and errors.As see err through it.
func within(context string, err error) error {
	return &contextError{text: prefix + context + ": " + strings.TrimPrefix(err.Error(), prefix), err: err}
}

type contextError struct {
	text string
	err  error
}

func (e *contextError) Error() string { return e.text }
func (e *contextError) Unwrap() error { return e.err }
