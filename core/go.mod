module github.com/babelqueue/babelqueue-go/core

go 1.25
