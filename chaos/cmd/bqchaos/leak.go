package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	pulsarclient "github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"github.com/babelqueue/babelqueue-go/pulsar"
)

// leakMain is `bqchaos leak`: it opens and closes the binding's transport,
// an App consume loop (one message published and handled per cycle) and,
// on Kafka, a Reinjector, -cycles times in this process, then checks that
// goroutines and this process's TCP connections to the broker are back to
// the baseline measured after one warm-up cycle.
func leakMain(args []string) int {
	fs := flag.NewFlagSet("bqchaos leak", flag.ContinueOnError)
	broker := fs.String("broker", "", "kafka or pulsar")
	cycles := fs.Int("cycles", 50, "open/close cycles after the warm-up")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var (
		cycle func(ctx context.Context, i int) error
		port  int
		err   error
	)
	topic := fmt.Sprintf("chaos-leak-%x", time.Now().UnixNano()/1e6)
	switch *broker {
	case "kafka":
		cycle, port, err = kafkaLeakCycle(ctx, topic, log)
	case "pulsar":
		cycle, port, err = pulsarLeakCycle(topic, log)
	default:
		fmt.Fprintln(os.Stderr, "bqchaos leak: -broker must be kafka or pulsar")
		return 2
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bqchaos leak: %v\n", err)
		return 1
	}
	if err := cycle(ctx, 0); err != nil { // warm-up: lazily started package state
		fmt.Fprintf(os.Stderr, "bqchaos leak: warm-up: %v\n", err)
		return 1
	}
	gBefore := settledGoroutines(0, 3*time.Second)
	cBefore, err := brokerConns(port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bqchaos leak: %v\n", err)
		return 1
	}
	start := time.Now()
	for i := 1; i <= *cycles; i++ {
		if err := cycle(ctx, i); err != nil {
			fmt.Fprintf(os.Stderr, "bqchaos leak: cycle %d: %v\n", i, err)
			return 1
		}
	}
	// pulsar-client-go ends a closed producer's send-timeout goroutine only
	// when its timer fires, up to SendTimeout (30 s by default) after Close.
	gAfter := settledGoroutines(gBefore, 45*time.Second)
	cAfter, err := brokerConns(port)
	for wait := time.Now().Add(10 * time.Second); err == nil && cAfter > cBefore && time.Now().Before(wait); {
		time.Sleep(200 * time.Millisecond)
		cAfter, err = brokerConns(port)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bqchaos leak: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "leak detail: %d cycles in %s\n", *cycles, time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("leak: broker=%s cycles=%d goroutines_before=%d goroutines_after=%d conns_before=%d conns_after=%d\n",
		*broker, *cycles, gBefore, gAfter, cBefore, cAfter)
	if gAfter > gBefore || cAfter > cBefore {
		fmt.Fprintln(os.Stderr, "leak: FAIL: goroutines or connections did not return to the baseline")
		if gAfter > gBefore {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "%s\n", buf[:runtime.Stack(buf, true)])
		}
		return 1
	}
	return 0
}

// settledGoroutines waits (up to limit) until the goroutine count is at
// most target (0: until it stops falling for a second) and returns it.
func settledGoroutines(target int, limit time.Duration) int {
	end := time.Now().Add(limit)
	last, stable := runtime.NumGoroutine(), time.Now()
	for time.Now().Before(end) {
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
		n := runtime.NumGoroutine()
		if target > 0 && n <= target {
			return n
		}
		if n != last {
			last, stable = n, time.Now()
		} else if target == 0 && time.Since(stable) >= time.Second {
			return n
		}
	}
	return runtime.NumGoroutine()
}

// brokerConns counts this process's TCP sockets whose remote port is port:
// the socket inodes of /proc/self/fd matched against /proc/self/net/tcp{,6}.
func brokerConns(port int) (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("list fds: %w", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, fmt.Errorf("read %s: %w", table, err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			remote := f[2]
			i := strings.LastIndexByte(remote, ':')
			p, err := strconv.ParseInt(remote[i+1:], 16, 32)
			if err == nil && int(p) == port {
				n++
			}
		}
		f.Close()
	}
	return n, nil
}

func portOf(hostport string) (int, error) {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("broker address %q: %w", hostport, err)
	}
	return strconv.Atoi(p)
}

// consumeOne runs an App consume loop on tr until one message is handled.
func consumeOne(ctx context.Context, tr babelqueue.Transport, topic string, seq int) error {
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(topic), babelqueue.WithPollTimeout(200*time.Millisecond))
	if err != nil {
		return err
	}
	got := make(chan struct{}, 1)
	app.Handle(URN, func(context.Context, *babelqueue.Envelope) error {
		select {
		case got <- struct{}{}:
		default:
		}
		return nil
	})
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	_, err = app.Publish(pctx, URN, map[string]any{"seq": seq})
	pcancel()
	if err != nil {
		return err
	}
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Consume(cctx) }()
	var werr error
	select {
	case <-got:
	case err := <-done:
		ccancel()
		return fmt.Errorf("consume ended early: %v", err)
	case <-time.After(30 * time.Second):
		werr = errors.New("no message handled within 30s")
	}
	ccancel()
	if err := <-done; err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	return werr
}

func kafkaLeakCycle(ctx context.Context, topic string, log *slog.Logger) (func(context.Context, int) error, int, error) {
	brokers := kafkaBrokers()
	if len(brokers) == 0 {
		return nil, 0, errors.New("BQ_KAFKA_BROKERS is not set")
	}
	port, err := portOf(brokers[0])
	if err != nil {
		return nil, 0, err
	}
	setup, err := kafka.New(kafka.WithBrokers(brokers...), kafka.WithRetryTiers(tiers...), kafka.WithLogger(log))
	if err != nil {
		return nil, 0, err
	}
	err = setup.EnsureTopics(ctx, topic, 1, 1)
	setup.Close()
	if err != nil {
		return nil, 0, err
	}
	return func(ctx context.Context, i int) error {
		tr, err := kafka.New(kafka.WithBrokers(brokers...), kafka.WithGroupID(topic+"-g"), kafka.WithRetryTiers(tiers...), kafka.WithLogger(log))
		if err != nil {
			return err
		}
		defer tr.Close()
		if err := consumeOne(ctx, tr, topic, i); err != nil {
			return err
		}
		rt, err := kafka.New(kafka.WithBrokers(brokers...), kafka.WithReinjectGroupID(topic+"-r"), kafka.WithRetryTiers(tiers...), kafka.WithLogger(log))
		if err != nil {
			return err
		}
		defer rt.Close()
		r, err := rt.NewReinjector(topic)
		if err != nil {
			return err
		}
		rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer rcancel()
		if err := r.Run(rctx); err != nil {
			return fmt.Errorf("reinjector: %w", err)
		}
		if err := rt.Close(); err != nil {
			return fmt.Errorf("close reinjector transport: %w", err)
		}
		return tr.Close()
	}, port, nil
}

func pulsarLeakCycle(topic string, log *slog.Logger) (func(context.Context, int) error, int, error) {
	url := os.Getenv("BQ_PULSAR_URL")
	if url == "" {
		return nil, 0, errors.New("BQ_PULSAR_URL is not set")
	}
	port, err := portOf(strings.TrimPrefix(url, "pulsar://"))
	if err != nil {
		return nil, 0, err
	}
	return func(ctx context.Context, i int) error {
		tr, err := pulsar.New(pulsar.WithServiceURL(url), pulsar.WithSubscription("leak"),
			pulsar.WithSubscriptionType(pulsarclient.Shared), pulsar.WithLogger(log))
		if err != nil {
			return err
		}
		defer tr.Close()
		if err := consumeOne(ctx, tr, topic, i); err != nil {
			return err
		}
		return tr.Close()
	}, port, nil
}
