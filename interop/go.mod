module github.com/babelqueue/babelqueue-go/interop

go 1.25.0

require (
	github.com/babelqueue/babelqueue-go/brokertest v0.1.0
	github.com/babelqueue/babelqueue-go/core v0.1.0
	github.com/babelqueue/babelqueue-go/kafka v0.1.0
	github.com/google/go-cmp v0.7.0
	github.com/segmentio/kafka-go v0.4.51
)

require (
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.26 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/stretchr/testify v1.10.0 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.1.2 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	golang.org/x/text v0.37.0 // indirect
)
