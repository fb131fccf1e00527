// Package integration holds the outbox's tests against real servers that
// need a binding (PostgreSQL and Kafka): the relay throughput benchmark and
// the SIGKILL test (cmd/bqoutboxkill). It is its own module so that the
// outbox module requires no binding.
package integration
