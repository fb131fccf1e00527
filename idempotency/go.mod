module github.com/babelqueue/babelqueue-go/idempotency

go 1.25.0

require github.com/babelqueue/babelqueue-go/core v0.1.0
