module github.com/babelqueue/babelqueue-go/kafkashare

go 1.25.0

require (
	github.com/babelqueue/babelqueue-go/brokertest v0.1.0
	github.com/babelqueue/babelqueue-go/conformance v0.1.0
	github.com/babelqueue/babelqueue-go/core v0.1.0
	github.com/babelqueue/babelqueue-go/kafka v0.1.0
	github.com/twmb/franz-go v1.21.7
	github.com/twmb/franz-go/pkg/kmsg v1.13.1
)

require (
	github.com/babelqueue/babelqueue-go/idempotency v0.1.0 // indirect
	github.com/babelqueue/babelqueue-go/schema v0.1.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.26 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/segmentio/kafka-go v0.4.51 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.1.2 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	golang.org/x/text v0.37.0 // indirect
)
