package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
	kafkago "github.com/segmentio/kafka-go"
)

// countingWriter counts the records the re-injector wrote, per topic, for
// /metrics.
type countingWriter struct {
	w        bqkafka.Writer
	mu       sync.Mutex
	byTopic  map[string]int64
	errors   atomic.Int64
	lastUnix atomic.Int64
}

func (c *countingWriter) WriteMessages(ctx context.Context, msgs ...kafkago.Message) error {
	err := c.w.WriteMessages(ctx, msgs...)
	if err != nil {
		c.errors.Add(1)
		return err
	}
	c.mu.Lock()
	for _, m := range msgs {
		c.byTopic[m.Topic]++
	}
	c.mu.Unlock()
	c.lastUnix.Store(time.Now().Unix())
	return nil
}

// reinjectServer serves /healthz and /metrics.
type reinjectServer struct {
	writer  *countingWriter
	topics  []string
	tiers   int
	started time.Time
	running atomic.Bool
}

func (s *reinjectServer) healthz(w http.ResponseWriter, _ *http.Request) {
	if !s.running.Load() {
		http.Error(w, "stopped\n", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *reinjectServer) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	up := 0
	if s.running.Load() {
		up = 1
	}
	fmt.Fprintf(w, "# HELP bq_reinject_up 1 while the re-injector runs.\n# TYPE bq_reinject_up gauge\nbq_reinject_up %d\n", up)
	fmt.Fprintf(w, "# HELP bq_reinject_start_time_seconds Start time of the process.\n# TYPE bq_reinject_start_time_seconds gauge\nbq_reinject_start_time_seconds %d\n", s.started.Unix())
	fmt.Fprintf(w, "# HELP bq_reinject_tiers Retry tiers per work topic.\n# TYPE bq_reinject_tiers gauge\nbq_reinject_tiers %d\n", s.tiers)
	s.writer.mu.Lock()
	counts := make(map[string]int64, len(s.writer.byTopic))
	for k, v := range s.writer.byTopic {
		counts[k] = v
	}
	s.writer.mu.Unlock()
	topics := append([]string(nil), s.topics...)
	for k := range counts {
		found := false
		for _, t := range topics {
			found = found || t == k
		}
		if !found {
			topics = append(topics, k)
		}
	}
	sort.Strings(topics)
	fmt.Fprintf(w, "# HELP bq_reinject_records_total Records written back to their work topic.\n# TYPE bq_reinject_records_total counter\n")
	for _, t := range topics {
		fmt.Fprintf(w, "bq_reinject_records_total{topic=%q} %d\n", t, counts[t])
	}
	fmt.Fprintf(w, "# HELP bq_reinject_write_errors_total Failed writes (retried by the re-injector).\n# TYPE bq_reinject_write_errors_total counter\nbq_reinject_write_errors_total %d\n", s.writer.errors.Load())
	fmt.Fprintf(w, "# HELP bq_reinject_last_write_time_seconds Time of the last successful write (0: none).\n# TYPE bq_reinject_last_write_time_seconds gauge\nbq_reinject_last_write_time_seconds %d\n", s.writer.lastUnix.Load())
}

const reinjectHelp = `Runs the Kafka re-injector (SPEC 6) for the given work topics: it consumes
<topic>.retry.1 ... <topic>.retry.<N> in a consumer group, waits out each
record's tier and writes it back to its work topic, committing only after
the broker acknowledged the write. SIGINT or SIGTERM stops it gracefully:
waiting records stay uncommitted for the next run, written ones are
committed before exit.

HTTP endpoints on --http (loopback by default; "" disables them):
  /healthz  200 "ok" while running, 503 otherwise
  /metrics  Prometheus text: bq_reinject_up, bq_reinject_records_total{topic},
            bq_reinject_write_errors_total, bq_reinject_last_write_time_seconds

` + connEnvHelp

const reinjectExamples = `  bq reinject --broker kafka://127.0.0.1:9092 --topic orders --topic payments
  bq reinject --broker kafka://127.0.0.1:9092 --topic orders --tiers 1s,10s --http 127.0.0.1:9464
  curl -s 127.0.0.1:9464/metrics`

func runReinject(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := leafFlags("bq reinject", "bq reinject --broker URL --topic T [--topic T]... [--tiers ...] [--group G] [--http ADDR]", reinjectHelp, reinjectExamples, errOut)
	var cf connFlags
	cf.register(fs)
	var topics multiString
	fs.Var(&topics, "topic", "work topic whose retry tiers are re-injected (repeatable)")
	tiersFlag := fs.String("tiers", tiersString(bqkafka.DefaultRetryTiers), "retry tiers, ascending, as the producers use them")
	group := fs.String("group", "bq-reinject", "consumer group of the re-injector")
	httpAddr := fs.String("http", "127.0.0.1:9464", `listen address of /healthz and /metrics ("" disables)`)
	verbose := fs.Bool("v", false, "log the re-injector's activity on stderr")
	if err := parseLeaf(fs, args, errOut); err != nil {
		return err
	}
	if len(topics) == 0 {
		return usageErrorf(fs, errOut, "--topic is required")
	}
	tiers, err := parseTiers(*tiersFlag)
	if err != nil || len(tiers) == 0 {
		if err == nil {
			err = errors.New("--tiers: at least one tier is needed")
		}
		return usageErrorf(fs, errOut, "%v", err)
	}
	u, err := cf.url()
	if err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	if err := cf.check(u); err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	k, err := cf.kafka(ctx, u)
	if err != nil {
		return err
	}
	defer k.close()
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))
	kw := &kafkago.Writer{
		Addr:         kafkago.TCP(k.brokers...),
		Balancer:     &bqkafka.Murmur2Balancer{},
		RequiredAcks: kafkago.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		Transport:    k.client.Transport,
	}
	defer kw.Close()
	cw := &countingWriter{w: kw, byTopic: map[string]int64{}}
	opts := append(k.transportOptions(), bqkafka.WithRetryTiers(tiers...), bqkafka.WithGroupID(*group), bqkafka.WithWriter(cw), bqkafka.WithLogger(logger))
	t, err := bqkafka.New(opts...)
	if err != nil {
		return err
	}
	defer t.Close()
	r, err := t.NewReinjector(topics...)
	if err != nil {
		return err
	}
	srv := &reinjectServer{writer: cw, topics: topics, tiers: len(tiers), started: time.Now()}
	srv.running.Store(true)
	var hs *http.Server
	var serveDone chan error
	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("--http %s: %w", *httpAddr, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", srv.healthz)
		mux.HandleFunc("/metrics", srv.metrics)
		hs = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		serveDone = make(chan error, 1)
		go func() { serveDone <- hs.Serve(ln) }()
		fmt.Fprintf(out, "BQ_REINJECT_HTTP=%s\n", ln.Addr())
	}
	fmt.Fprintf(errOut, "bq reinject: re-injecting %d tier(s) of %v in group %q (Ctrl-C or SIGTERM stops)\n", len(tiers), []string(topics), *group)
	runErr := r.Run(ctx)
	srv.running.Store(false)
	if hs != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = hs.Shutdown(sctx)
		cancel()
		<-serveDone
	}
	if runErr != nil {
		return fmt.Errorf("re-injector: %w", runErr)
	}
	fmt.Fprintln(errOut, "bq reinject: stopped")
	return nil
}
