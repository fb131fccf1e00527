module github.com/babelqueue/babelqueue-go/schema

go 1.25.0

require (
	github.com/babelqueue/babelqueue-go/core v0.1.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.14.0 // indirect
