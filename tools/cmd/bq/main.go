// Command bq is the BabelQueue for Go command line.
//
// Usage:
//
//	bq <command> [<subcommand>] [flags]
//
// Commands:
//
//	dev kafka   run an embedded Kafka-protocol broker on 127.0.0.1 for the
//	            demo and local development (github.com/twmb/franz-go/pkg/kfake)
//
// Run "bq help" or "bq <command> -h" for details.
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
