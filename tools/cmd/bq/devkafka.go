package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
)

// defaultDevKafkaAddr is where the demo and the README expect the broker.
const defaultDevKafkaAddr = "127.0.0.1:9092"

// runDevKafka runs an embedded broker until ctx ends (Ctrl-C). Its first
// line on out is "BQ_KAFKA_BROKERS=<host:port>", so scripts can read it.
func runDevKafka(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("bq dev kafka", flag.ContinueOnError)
	fs.SetOutput(errOut)
	addr := fs.String("addr", defaultDevKafkaAddr, "listen address; the host must be 127.0.0.1 (or localhost), port 0 picks a free port")
	partitions := fs.Int("partitions", 1, "partitions of topics created on first use")
	topics := fs.String("topics", "", "comma-separated topics to create at start (with -partitions partitions)")
	verbose := fs.Bool("v", false, "log the broker's requests and warnings on stderr")
	fs.Usage = func() {
		fmt.Fprintf(errOut, "Usage: bq dev kafka [flags]\n\n"+
			"Runs an embedded Kafka-protocol broker (franz-go's kfake) in this process until\n"+
			"interrupted. It is a fake for the demo and local development: data lives in\n"+
			"memory and is lost on exit. Integration tests use the real brokers of\n"+
			"tools/brokers instead.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "bq dev kafka: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	port, err := loopbackPort(*addr)
	if err != nil {
		fmt.Fprintf(errOut, "bq dev kafka: -addr: %v\n", err)
		return errUsage
	}

	opts := []devkafka.Option{devkafka.WithPort(port), devkafka.WithDefaultPartitions(*partitions)}
	if *topics != "" {
		var names []string
		for _, n := range strings.Split(*topics, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		opts = append(opts, devkafka.WithTopics(*partitions, names...))
	}
	if *verbose {
		opts = append(opts, devkafka.WithLogger(slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	b, err := devkafka.Start(opts...)
	if err != nil {
		return err
	}
	defer b.Close()

	fmt.Fprintf(out, "BQ_KAFKA_BROKERS=%s\n", strings.Join(b.Addrs(), ","))
	fmt.Fprintf(errOut, "bq dev kafka: embedded Kafka-protocol broker listening on %s (in memory; Ctrl-C stops it)\n", strings.Join(b.Addrs(), ","))
	<-ctx.Done()
	fmt.Fprintln(errOut, "bq dev kafka: stopping")
	return nil
}

// loopbackPort checks that addr is host:port on the loopback address the
// embedded broker binds (127.0.0.1) and returns the port.
func loopbackPort(addr string) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	if host != "127.0.0.1" && host != "localhost" {
		return 0, fmt.Errorf("host %q: the embedded broker listens on 127.0.0.1 only", host)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return 0, fmt.Errorf("port %q: want 0-65535", p)
	}
	return port, nil
}
