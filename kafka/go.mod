module github.com/babelqueue/babelqueue-go/kafka

go 1.25.0

require (
	github.com/babelqueue/babelqueue-go/core v0.1.0
	github.com/google/go-cmp v0.7.0
	github.com/segmentio/kafka-go v0.4.51
)

require (
	github.com/babelqueue/babelqueue-go/conformance v0.1.0
	github.com/babelqueue/babelqueue-go/tools v0.1.0
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.26 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.1.2 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	golang.org/x/text v0.31.0 // indirect
)

replace github.com/babelqueue/babelqueue-go/core => ../core

replace github.com/babelqueue/babelqueue-go/conformance => ../conformance

replace github.com/babelqueue/babelqueue-go/tools => ../tools
