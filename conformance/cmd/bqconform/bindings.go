package main

import (
	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
)

// bindings lists every binding the command runs, in report order. A broker
// module adds its binding here (and a require of its module in
// conformance/go.mod).
func bindings() []conformance.Binding {
	return []conformance.Binding{
		corebinding.New(),
	}
}
