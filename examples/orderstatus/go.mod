module github.com/babelqueue/babelqueue-go/examples/orderstatus

go 1.25

require github.com/babelqueue/babelqueue-go/core v0.1.0

replace github.com/babelqueue/babelqueue-go/core => ../../core
