// Command bq is the BabelQueue for Go operator command line.
//
// Usage:
//
//	bq <command> [<subcommand>] [flags]
//
// Commands: dev kafka, topics ensure|list|describe, lag, tail, publish,
// dlq stats|peek|discard, redrive, reinject, version, completion. Run
// "bq --help" or "bq <command> --help" for flags and examples.
//
// Brokers are named by --broker/-b, else BQ_KAFKA_BROKERS (a bare
// host:port list means Kafka) or BQ_PULSAR_URL; TLS, SASL and Pulsar
// tokens come from flags or BQ_* environment variables.
//
// The command line is built on github.com/spf13/cobra (see README.md for
// why). Every broker call has a deadline (--dial-timeout for the first
// connection, --timeout for each request), and SIGINT or SIGTERM stops any
// command within 2 s: the root context is cancelled at once and, should a
// command not return within stopGrace, the process exits anyway.
//
// Exit codes: 0 success, 1 failure, 2 usage error, 3 partial (a redrive
// left records held by the replay-count guard), 130 interrupted (an
// interrupted redrive or dlq discard is resumable). README.md has details.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopGrace is how long a command may take to stop after SIGINT or
// SIGTERM before the process exits without it (the 2 s promise, with
// room for the exit itself).
const stopGrace = 1500 * time.Millisecond

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	done := make(chan int, 1)
	go func() { done <- run(ctx, os.Args[1:], os.Stdout, os.Stderr) }()
	select {
	case code := <-done:
		stop()
		os.Exit(code)
	case <-ctx.Done():
	}
	// A signal arrived: the command's context is cancelled. Give it
	// stopGrace to report and return; a second signal exits at once.
	stop()
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	select {
	case code := <-done:
		os.Exit(code)
	case <-again:
	case <-time.After(stopGrace):
		fmt.Fprintf(os.Stderr, "bq: interrupted; the command did not stop within %v, exiting\n", stopGrace)
	}
	os.Exit(exitInterrupted)
}
