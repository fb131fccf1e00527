package main

import (
	"context"
	"fmt"
	"github.com/spf13/cobra"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
)

// defaultDevKafkaAddr is where the demo and the README expect the broker.
const defaultDevKafkaAddr = "127.0.0.1:9092"

// newDevKafkaCmd runs an embedded broker until ctx ends (Ctrl-C). Its
// first line on out is "BQ_KAFKA_BROKERS=<host:port>", so scripts can
// read it.
func newDevKafkaCmd() *cobra.Command {
	cmd := leaf("kafka", "run an embedded Kafka-protocol broker on 127.0.0.1", `Runs an embedded Kafka-protocol broker (franz-go's kfake) in this process until
interrupted. It is a fake for the demo and local development: data lives in
memory and is lost on exit. Integration tests use the real brokers of
tools/brokers instead. The first line on stdout is BQ_KAFKA_BROKERS=<host:port>,
which every bq command reads as it is.`, "  bq dev kafka\n  eval \"$(bq dev kafka --addr 127.0.0.1:0 | head -1)\"")
	fs := cmd.Flags()
	addr := fs.String("addr", defaultDevKafkaAddr, "listen address; the host must be 127.0.0.1 (or localhost), port 0 picks a free port")
	partitions := fs.IntP("partitions", "p", 1, "partitions of topics created on first use")
	topics := fs.String("topics", "", "comma-separated topics to create at start (with --partitions partitions)")
	verbose := fs.BoolP("verbose", "v", false, "log the broker's requests and warnings on stderr")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return devKafka(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), *addr, *partitions, *topics, *verbose)
	}
	return cmd
}

func devKafka(ctx context.Context, out, errOut io.Writer, addr string, partitions int, topicList string, verbose bool) error {
	port, err := loopbackPort(addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}

	opts := []devkafka.Option{devkafka.WithPort(port), devkafka.WithDefaultPartitions(partitions)}
	if topicList != "" {
		var names []string
		for _, n := range strings.Split(topicList, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		opts = append(opts, devkafka.WithTopics(partitions, names...))
	}
	if verbose {
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
