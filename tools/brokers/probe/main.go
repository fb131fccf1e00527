// Command probe waits until a broker started by tools/brokers really serves
// clients, and exits non-zero with the last error when it does not within
// the timeout. It also writes the throwaway TLS certificates and the Pulsar
// token the brokers are started with. The broker scripts run it; it is not
// meant for other use.
//
//	probe kafka  -brokers 127.0.0.1:19092 -sasl-brokers 127.0.0.1:19093 -user U -password P
//	             [-tls-brokers 127.0.0.1:19095 -sasl-tls-brokers 127.0.0.1:19096 -ca ca.pem] [-timeout 3m] [-pid N]
//	probe pulsar -url pulsar://127.0.0.1:16650 -admin http://127.0.0.1:18080
//	             [-tls-url pulsar+ssl://127.0.0.1:16651 -ca ca.pem] [-token-file token.jwt] [-timeout 3m] [-pid N]
//	probe kafka-cluster -brokers 127.0.0.1:29092,... -nodes 1,2,3 [-replicas 3] [-pids p1,...] (see cluster.go)
//	probe kafka-leader  -brokers 127.0.0.1:29092,... -topic T -partition P
//	probe certs  -dir DIR [-hosts 127.0.0.1,localhost]
//	probe token  -dir DIR [-subject bq-client]
//
// Kafka is ready when a topic can be created through the PLAINTEXT listener
// (so the controller and the broker both work), a metadata request
// succeeds through the SASL listener with both SCRAM mechanisms and, when
// given, through the TLS listener and the SASL-over-TLS listener (with the
// CA of -ca). Pulsar is ready when the admin API lists the namespace
// public/default, a message can be produced through the binary protocol
// without credentials (so the bookie accepts writes and anonymous clients
// are let in) and, when given, through the TLS URL with the token of -token-file.
//
// With -pid, the probe gives up at once when that process is gone.
//
// certs writes a CA and a server certificate for the hosts (see runCerts);
// token writes an HMAC secret and an HS256 JWT signed with it (see runToken).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe kafka|kafka-cluster|kafka-leader|pulsar|certs|token [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "kafka":
		err = runKafka(os.Args[2:])
	case "pulsar":
		err = runPulsar(os.Args[2:])
	case "kafka-cluster":
		err = runKafkaCluster(os.Args[2:])
	case "kafka-leader":
		err = runKafkaLeader(os.Args[2:])
	case "certs":
		err = runCerts(os.Args[2:])
	case "token":
		err = runToken(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want kafka, kafka-cluster, kafka-leader, pulsar, certs or token)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

// common holds the flags every probe accepts.
type common struct {
	timeout time.Duration
	pid     int
}

func (c *common) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.timeout, "timeout", 3*time.Minute, "give up after this long")
	fs.IntVar(&c.pid, "pid", 0, "give up when this process is gone (0: do not watch)")
}

// errProcessGone reports that the watched broker process exited.
var errProcessGone = errors.New("broker process exited")

// poll calls check until it succeeds, the timeout passes or the watched
// process dies. Each check gets its own short deadline.
func poll(c common, name string, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := time.Now()
	var last error
	for attempt := 1; ; attempt++ {
		if c.pid > 0 && !alive(c.pid) {
			err := fmt.Errorf("%s: %w (pid %d) after %s", name, errProcessGone, c.pid, time.Since(start).Round(time.Second))
			if last != nil {
				err = fmt.Errorf("%w; last check error: %v", err, last)
			}
			return err
		}
		cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			fmt.Fprintf(os.Stderr, "probe: %s serving after %s (%d checks)\n", name, time.Since(start).Round(100*time.Millisecond), attempt)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not serving after %s: %w", name, c.timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// alive reports whether process pid exists (signal 0 probes without
// delivering anything).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// quietLogger discards client library logs; the probe reports errors itself.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
