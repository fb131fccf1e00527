package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	"github.com/babelqueue/babelqueue-go/core/driver"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
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

// Unwrap returns the wrapped writer, so that kafka.WithWriter can check its
// attempts per call.
func (c *countingWriter) Unwrap() bqkafka.Writer { return c.w }

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
	// lastReachable is when the broker last answered (Unix nanoseconds);
	// unhealthyAfter is how long it may stay silent before /healthz fails.
	lastReachable  atomic.Int64
	unhealthyAfter time.Duration
	now            func() time.Time
	mismatch       *tierMismatch
	// backlog holds the latest backlog samples of the tiers; /healthz
	// fails when one of them has no good sample for too long.
	backlog *backlogStore
}

func (s *reinjectServer) healthz(w http.ResponseWriter, _ *http.Request) {
	if !s.running.Load() {
		http.Error(w, "stopped\n", http.StatusServiceUnavailable)
		return
	}
	if silent := s.now().Sub(time.Unix(0, s.lastReachable.Load())); silent > s.unhealthyAfter {
		http.Error(w, fmt.Sprintf("broker unreachable for %v (more than %v)\n", silent.Truncate(time.Second), s.unhealthyAfter), http.StatusServiceUnavailable)
		return
	}
	if s.backlog != nil {
		if tier, age, lastErr, stale := s.backlog.stale(); stale {
			msg := fmt.Sprintf("no backlog sample of %s for %v (more than %v)", tier, age.Round(10*time.Millisecond), s.backlog.maxAge)
			if lastErr != "" {
				msg += ": " + lastErr
			}
			http.Error(w, msg+"\n", http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

// watchBroker pings the broker every period until ctx ends, recording
// when it last answered.
func (s *reinjectServer) watchBroker(ctx context.Context, k *kafkaConn, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		for _, b := range k.brokers {
			if pingBroker(ctx, k.dialer(), b, min(k.timeout, period)) == nil {
				s.lastReachable.Store(s.now().UnixNano())
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
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
	fmt.Fprintf(w, "# HELP bq_reinject_broker_reachable 1 while the broker answered within --unhealthy-after.\n# TYPE bq_reinject_broker_reachable gauge\nbq_reinject_broker_reachable %d\n",
		b2i(s.now().Sub(time.Unix(0, s.lastReachable.Load())) <= s.unhealthyAfter))
	if s.mismatch != nil {
		fmt.Fprintf(w, "# HELP bq_reinject_tier_mismatch_total Records whose bq-delay is not the duration of the tier they were carried on.\n# TYPE bq_reinject_tier_mismatch_total counter\n")
		for _, t := range s.mismatch.tiers() {
			fmt.Fprintf(w, "bq_reinject_tier_mismatch_total{tier=%q} %d\n", t, s.mismatch.count(t))
		}
	}
	if s.backlog != nil {
		s.backlog.writeMetrics(w)
	}
	fmt.Fprintf(w, "# HELP bq_reinject_write_errors_total Failed writes (retried by the re-injector).\n# TYPE bq_reinject_write_errors_total counter\nbq_reinject_write_errors_total %d\n", s.writer.errors.Load())
	fmt.Fprintf(w, "# HELP bq_reinject_last_write_time_seconds Time of the last successful write (0: none).\n# TYPE bq_reinject_last_write_time_seconds gauge\nbq_reinject_last_write_time_seconds %d\n", s.writer.lastUnix.Load())
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tierMismatch is a driver.ReinjectHook that checks each carried
// record's bq-delay against the duration of the tier it was carried on,
// warns once per tier and counts every mismatch.
type tierMismatch struct {
	durations map[string]time.Duration // tier topic -> duration used
	log       *slog.Logger
	mu        sync.Mutex
	counts    map[string]int64
}

// OnReinject logs each carried record's position at debug level (-v), so
// that a record carried twice shows as one tier, partition and offset
// logged twice, and checks its delay against its tier's duration.
func (m *tierMismatch) OnReinject(ctx context.Context, r *driver.Reinjection) {
	if m.log.Enabled(ctx, slog.LevelDebug) {
		if r.Err != nil {
			m.log.Debug("bq reinject: write back failed", "tier", r.Tier, "partition", r.Partition, "offset", r.Offset,
				"queue", r.Queue, "err", r.Err)
		} else {
			m.log.Debug("bq reinject: carried", "tier", r.Tier, "partition", r.Partition, "offset", r.Offset,
				"queue", r.Queue, "lag", r.Lag)
		}
	}
	want, ok := m.durations[r.Tier]
	if !ok || r.Err != nil || r.Delay == want {
		return
	}
	m.mu.Lock()
	m.counts[r.Tier]++
	first := m.counts[r.Tier] == 1
	m.mu.Unlock()
	if first {
		m.log.Warn("bq reinject: a record's bq-delay is not its tier's duration: the producers and the re-injector disagree on the tiers; records wait the re-injector's duration (counted in bq_reinject_tier_mismatch_total)",
			"tier", r.Tier, "tier_duration", want, "record_delay", r.Delay)
	}
}

func (m *tierMismatch) tiers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := make([]string, 0, len(m.durations))
	for t := range m.durations {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

func (m *tierMismatch) count(tier string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[tier]
}

const reinjectHelp = `Runs the Kafka re-injector for the given work topics: it consumes
their retry tier topics in a consumer group, waits out each record's tier
and writes it back to its work topic, committing only after the broker
acknowledged the write. SIGINT or SIGTERM stops it gracefully: waiting
records stay uncommitted for the next run, written ones are committed
before exit.

Tiers are declared once, by the producers (kafka.WithRetryTiers). The
re-injector finds the tier topics that exist (<topic>.retry.1, .2, ...)
and takes each tier's duration from --tiers, else from the bq-delay
header of the tier's newest record; a tier with neither gets the
library's recommended duration (5s, 30s, 5m, 30m) and a warning. A
configured tier without a topic, or a topic beyond the configured tiers,
is reported. Every carried record whose bq-delay is not its tier's
duration is counted (bq_reinject_tier_mismatch_total) and warned about.

HTTP endpoints on --http (loopback by default; "" disables them):
  /healthz  200 "ok" while running, the broker answered within
            --unhealthy-after and every tier's backlog was sampled within
            --backlog-interval plus a slack (the sample's own bound, 1s..10s,
            plus 1s); 503 otherwise, saying which
  /metrics  Prometheus text: bq_reinject_up, bq_reinject_records_total{topic},
            bq_reinject_write_errors_total, bq_reinject_last_write_time_seconds,
            bq_reinject_broker_reachable, bq_reinject_tier_mismatch_total{tier},
            and per tier from the latest good backlog sample:
            bq_reinject_backlog_records{tier,queue} (records not carried yet),
            bq_reinject_backlog_oldest_age_seconds{tier,queue} (how long the
            oldest has waited), bq_reinject_backlog_oldest_lag_seconds{tier,queue}
            (how far past its due time it is), bq_reinject_backlog_sample_ok{tier},
            bq_reinject_backlog_sample_time_seconds{tier},
            bq_reinject_backlog_sample_errors_total{tier}

` + connEnvHelp

const reinjectExamples = `  bq reinject -b 127.0.0.1:9092 --topic orders --topic payments
  bq reinject -b 127.0.0.1:9092 --topic orders --tiers 1s,10s --http 127.0.0.1:9464
  curl -s 127.0.0.1:9464/metrics`

// tierPlan is the tiers of the work topics that share them.
type tierPlan struct {
	topics []string
	tiers  []time.Duration
}

// planTiers finds the tier topics of each work topic and their durations.
func planTiers(ctx context.Context, k *kafkaConn, topics []string, configured []time.Duration, log *slog.Logger) ([]tierPlan, map[string]time.Duration, error) {
	names, _, err := k.listTopics(ctx)
	if err != nil {
		return nil, nil, err
	}
	byKey := map[string]*tierPlan{}
	var order []string
	durations := map[string]time.Duration{}
	for _, w := range topics {
		found, gaps := tierTopicsOf(w, names)
		for _, g := range gaps {
			log.Warn("bq reinject: tier topic after a missing tier is not consumed", "topic", g)
		}
		if configured != nil && len(found) < len(configured) {
			for n := len(found) + 1; n <= len(configured); n++ {
				log.Warn("bq reinject: configured tier has no topic; create it with bq topics ensure --tiers", "work_topic", w, "tier", n, "missing_topic", w+".retry."+strconv.Itoa(n))
			}
		}
		if configured != nil && len(found) > len(configured) {
			for _, t := range found[len(configured):] {
				log.Warn("bq reinject: tier topic beyond --tiers is not consumed", "topic", t)
			}
			found = found[:len(configured)]
		}
		if len(found) == 0 {
			log.Warn("bq reinject: no retry tier topic found", "work_topic", w, "want", w+".retry.1")
			continue
		}
		tiers := make([]time.Duration, len(found))
		for i, t := range found {
			switch {
			case configured != nil:
				tiers[i] = configured[i]
			default:
				tctx, cancel := context.WithTimeout(ctx, 2*readIdleTimeout)
				d, ok, err := k.newestDelay(tctx, t)
				cancel()
				if err != nil {
					return nil, nil, err
				}
				if !ok {
					d = bqkafka.DefaultRetryTiers[min(i, len(bqkafka.DefaultRetryTiers)-1)]
					log.Warn("bq reinject: tier topic has no record with bq-delay yet; using the recommended duration (give --tiers to be sure)", "topic", t, "duration", d)
				}
				tiers[i] = d
			}
			durations[t] = tiers[i]
		}
		for i := 1; i < len(tiers); i++ {
			if tiers[i] <= tiers[i-1] {
				return nil, nil, fmt.Errorf("tiers of %q do not ascend: %s (give --tiers)", w, tiersString(tiers))
			}
		}
		key := tiersString(tiers)
		if byKey[key] == nil {
			byKey[key] = &tierPlan{tiers: tiers}
			order = append(order, key)
		}
		byKey[key].topics = append(byKey[key].topics, w)
	}
	if len(order) == 0 {
		return nil, nil, fmt.Errorf("no retry tier topic found for %s: create them with bq topics ensure --tiers", strings.Join(topics, ", "))
	}
	plans := make([]tierPlan, 0, len(order))
	for _, key := range order {
		plans = append(plans, *byKey[key])
	}
	return plans, durations, nil
}

func newReinjectCmd() *cobra.Command {
	cmd := leaf("reinject", "run the Kafka re-injector for retry tiers until stopped", reinjectHelp, reinjectExamples)
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	topics := topicsFlag(fs, "work topic whose retry tiers are re-injected (repeatable, or comma-separated)")
	tiersFlag := fs.String("tiers", "", "retry tier durations, ascending, as the producers declare them (default: from the tier topics' records)")
	group := fs.StringP("group", "g", "bq-reinject", "consumer group of the re-injector")
	httpAddr := fs.String("http", "127.0.0.1:9464", `listen address of /healthz and /metrics ("" disables)`)
	unhealthyAfter := fs.Duration("unhealthy-after", 10*time.Second, "/healthz fails once the broker has not answered for this long")
	backlogEvery := fs.Duration("backlog-interval", bqkafka.DefaultReinjectBacklogInterval, "how often the tiers' backlog is sampled for /metrics; /healthz fails when no sample succeeds within it plus a slack")
	verbose := fs.BoolP("verbose", "v", false, "log the re-injector's activity on stderr, with the tier, partition and offset of every record carried")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		if len(*topics) == 0 {
			return usagef("--topic is required")
		}
		var configured []time.Duration
		if *tiersFlag != "" {
			tiers, err := parseTiers(*tiersFlag)
			if err != nil {
				return usagef("%v", err)
			}
			if len(tiers) == 0 {
				return usagef("--tiers: at least one tier is needed")
			}
			configured = tiers
		}
		if *unhealthyAfter <= 0 {
			return usagef("--unhealthy-after must be positive")
		}
		if *backlogEvery <= 0 {
			return usagef("--backlog-interval must be positive")
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
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
		plans, durations, err := planTiers(ctx, k, *topics, configured, logger)
		if err != nil {
			return err
		}
		kw := &kafkago.Writer{
			Addr:         kafkago.TCP(k.brokers...),
			Balancer:     &bqkafka.Murmur2Balancer{},
			RequiredAcks: kafkago.RequireAll,
			MaxAttempts:  1, // the re-injector repeats a failed write itself
			BatchTimeout: 5 * time.Millisecond,
			WriteTimeout: cf.timeout,
			Transport:    k.client.Transport,
		}
		defer kw.Close()
		cw := &countingWriter{w: kw, byTopic: map[string]int64{}}
		mismatch := &tierMismatch{durations: durations, log: logger, counts: map[string]int64{}}
		tierTopics := make([]string, 0, len(durations))
		for t := range durations {
			tierTopics = append(tierTopics, t)
		}
		backlog := newBacklogStore(tierTopics, *backlogEvery, backlogSlack(*backlogEvery), time.Now)
		var runners []*bqkafka.Reinjector
		ntiers := 0
		for _, p := range plans {
			opts := append(k.transportOptions(), bqkafka.WithRetryTiers(p.tiers...), bqkafka.WithReinjectGroupID(*group), bqkafka.WithWriter(cw),
				bqkafka.WithLogger(logger), bqkafka.WithReinjectHooks(mismatch, backlog), bqkafka.WithReinjectBacklogInterval(*backlogEvery))
			t, err := bqkafka.New(opts...)
			if err != nil {
				return err
			}
			defer t.Close()
			r, err := t.NewReinjector(p.topics...)
			if err != nil {
				return err
			}
			runners = append(runners, r)
			ntiers += len(p.tiers) * len(p.topics)
			fmt.Fprintf(errOut, "bq reinject: %v: %s found: %s\n", p.topics, nOf(len(p.tiers), "tier", ""), tiersString(p.tiers))
		}
		srv := &reinjectServer{writer: cw, topics: *topics, tiers: ntiers, started: time.Now(), unhealthyAfter: *unhealthyAfter, now: time.Now, mismatch: mismatch, backlog: backlog}
		srv.running.Store(true)
		srv.lastReachable.Store(time.Now().UnixNano())
		wctx, stopWatch := context.WithCancel(ctx)
		watchDone := make(chan struct{})
		go func() { defer close(watchDone); srv.watchBroker(wctx, k, min(*unhealthyAfter/3, 2*time.Second)) }()
		defer func() { stopWatch(); <-watchDone }()
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
		fmt.Fprintf(errOut, "bq reinject: re-injecting %s in group %q (Ctrl-C or SIGTERM stops)\n", nOf(ntiers, "tier topic", ""), *group)
		rctx, cancelRun := context.WithCancel(ctx)
		errs := make(chan error, len(runners))
		for _, r := range runners {
			go func(r *bqkafka.Reinjector) { errs <- r.Run(rctx) }(r)
		}
		var runErr error
		for range runners {
			if err := <-errs; err != nil && runErr == nil {
				runErr = err
				cancelRun() // one failed: stop the others
			}
		}
		cancelRun()
		srv.running.Store(false)
		if hs != nil {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
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
	return cmd
}
