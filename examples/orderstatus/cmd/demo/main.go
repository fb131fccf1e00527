// Command demo is `make demo`: it runs the order status processor on the
// embedded Kafka-protocol broker (or on the cluster named by
// BQ_KAFKA_BROKERS), publishes a scripted mix of order events, and prints
// what became of every record. Its last line is
//
//	accounted: produced=<n> projected=<p> dead_lettered=<d> lost=<l>
//
// and it exits 1 when a record is lost or the run does not complete.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/babelqueue/babelqueue-go/examples/orderstatus/internal/demo"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	var cfg demo.Config
	if v := strings.TrimSpace(os.Getenv("BQ_KAFKA_BROKERS")); v != "" {
		for _, b := range strings.Split(v, ",") {
			cfg.Brokers = append(cfg.Brokers, strings.TrimSpace(b))
		}
	}
	if _, err := demo.Run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}
