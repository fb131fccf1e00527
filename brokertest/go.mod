module github.com/babelqueue/babelqueue-go/brokertest

go 1.25.0

require (
	github.com/segmentio/kafka-go v0.4.51
	github.com/twmb/franz-go/pkg/kfake v0.0.0-20260905045312-d70fc1b5b9f8
)

require (
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.26 // indirect
	github.com/twmb/franz-go v1.21.7 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.13.1 // indirect
)
