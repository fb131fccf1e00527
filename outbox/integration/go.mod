module github.com/babelqueue/babelqueue-go/outbox/integration

go 1.26.0

require (
	github.com/babelqueue/babelqueue-go/brokertest v0.1.0
	github.com/babelqueue/babelqueue-go/core v0.1.0
	github.com/babelqueue/babelqueue-go/kafka v0.1.0
	github.com/babelqueue/babelqueue-go/outbox v0.1.0
	github.com/jackc/pgx/v5 v5.13.0
	github.com/segmentio/kafka-go v0.4.51
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.26 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.1.2 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
