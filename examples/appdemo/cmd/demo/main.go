// Command demo is `make demo`: the App's main job on the embedded
// Kafka-protocol broker (see package appdemo). Its last line accounts for
// every message; it exits 1 when one is lost or the run does not complete.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/babelqueue/babelqueue-go/examples/appdemo"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if _, err := appdemo.Run(ctx, appdemo.Config{}); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}
