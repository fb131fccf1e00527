package main

import (
	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
)

// bindings lists the bindings the command runs itself, in column order.
// The kafka and pulsar bindings cannot be here (their modules require this
// one); their columns come from their tests' reports (-matrix).
func bindings() []conformance.Binding {
	return []conformance.Binding{
		corebinding.New(),
	}
}
