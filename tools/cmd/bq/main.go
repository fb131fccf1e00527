// Command bq is the BabelQueue for Go command line.
//
// Usage:
//
//	bq <command> [<subcommand>] [flags]
//
// Commands:
//
//	dev kafka       run an embedded Kafka-protocol broker on 127.0.0.1 for the
//	                demo and local development (github.com/twmb/franz-go/pkg/kfake)
//	topics ensure   create a Kafka work topic, its retry tiers and its DLQ
//	reinject        run the Kafka re-injector (/healthz, /metrics)
//	dlq stats       count dead letters by reason, URN, original queue and age
//	dlq peek        show dead letters without consuming them
//	redrive         move dead letters back to work, resumably (SPEC 8)
//	publish         publish an envelope from a URN and JSON data
//	tail            print decoded envelopes and headers, following
//
// Brokers are named by URL (kafka://host:port[,host:port], kafka+ssl://...,
// pulsar://host:port, pulsar+ssl://...) with --broker or BQ_BROKER; TLS,
// SASL and Pulsar tokens come from flags or BQ_* environment variables.
//
// The command line uses the standard library's flag package with a small
// command tree (commands.go) rather than a framework such as cobra: the
// commands are few and flat, flag gives -h/--help and clear "flag provided
// but not defined" errors for free, and the module keeps one dependency
// less. The progress bar of redrive is github.com/schollz/progressbar/v3:
// a single small dependency, widely used and maintained, that writes to any
// io.Writer and is shown only when stdout is a terminal.
//
// Exit codes: 0 success, 1 failure (unreachable broker, broker or I/O
// error), 2 usage error (including a bad broker URL), 3 partial (a redrive
// left records held by the replay-count guard). README.md has the details.
//
// Run "bq help" or "bq <command> -h" for details and examples.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
