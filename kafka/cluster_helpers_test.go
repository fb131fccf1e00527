//go:build cluster

package kafka_test

// Helpers of the cluster failover tests (cluster_integration_test.go): the
// three-node cluster of tools/brokers/kafka-cluster.sh, a workload of
// producers and an App consumer, a sampler of committed offsets, and the
// read-back of what the topics hold. They use only the public API of the
// binding and of kafka-go, and only 127.0.0.1.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/babelqueue/babelqueue-go/kafka"
)

const clusterURN = "urn:babel:cluster:tick"

// clusterEnv is the running three-node cluster: its listeners and the
// script that kills and starts its nodes.
type clusterEnv struct {
	brokers []string
	ctl     string
}

// newClusterEnv reads BQ_KAFKA_CLUSTER_BROKERS (three 127.0.0.1 listeners)
// and BQ_KAFKA_CLUSTER_CTL, failing the test when they are missing or name
// another host, and checks that all three nodes serve.
func newClusterEnv(t *testing.T) *clusterEnv {
	t.Helper()
	raw := os.Getenv("BQ_KAFKA_CLUSTER_BROKERS")
	if raw == "" {
		t.Fatal("BQ_KAFKA_CLUSTER_BROKERS is not set: start the cluster with tools/brokers/kafka-cluster.sh up " +
			"and export its env lines (make cluster-tests does both)")
	}
	brokers := strings.Split(raw, ",")
	if len(brokers) != 3 {
		t.Fatalf("BQ_KAFKA_CLUSTER_BROKERS=%q: want three listeners", raw)
	}
	for _, b := range brokers {
		host, _, err := net.SplitHostPort(b)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("BQ_KAFKA_CLUSTER_BROKERS=%q: %q is not a 127.0.0.1 listener (%v)", raw, b, err)
		}
	}
	ctl := os.Getenv("BQ_KAFKA_CLUSTER_CTL")
	if ctl == "" {
		ctl = filepath.Join("..", "tools", "brokers", "kafka-cluster.sh")
	}
	abs, err := filepath.Abs(ctl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("cluster script: %v", err)
	}
	e := &clusterEnv{brokers: brokers, ctl: abs}
	if _, err := e.run(2*time.Minute, "status"); err != nil {
		t.Fatalf("the cluster is not fully up before the test: %v", err)
	}
	return e
}

// run runs the cluster script with args and returns its stdout.
func (e *clusterEnv) run(d time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.ctl, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kafka-cluster.sh %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// kill kills node with SIGKILL and returns the time the kill was confirmed
// (the process gone); the node is started again when the test ends.
func (e *clusterEnv) kill(t *testing.T, node int) time.Time {
	t.Helper()
	t.Cleanup(func() {
		start := time.Now()
		if _, err := e.run(5*time.Minute, "start", strconv.Itoa(node)); err != nil {
			t.Errorf("restarting node %d: %v", node, err)
			return
		}
		t.Logf("node %d restarted and serving after %v", node, time.Since(start).Round(time.Millisecond))
	})
	if _, err := e.run(30*time.Second, "kill", strconv.Itoa(node)); err != nil {
		t.Fatal(err)
	}
	// The script returns once the JVM is gone: a publish that starts after
	// this cannot have reached the killed node.
	return time.Now()
}

// controller returns the node id of the active controller.
func (e *clusterEnv) controller() (int, error) {
	out, err := e.run(30*time.Second, "controller")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// client returns a kafka-go client with its own connections and metadata.
func (e *clusterEnv) client(t testing.TB) *kafkago.Client {
	tr := &kafkago.Transport{Dial: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &kafkago.Client{Addr: kafkago.TCP(e.brokers...), Transport: tr, Timeout: 10 * time.Second}
}

// coordinator returns the node coordinating group, or -1 when it cannot
// be found.
func (e *clusterEnv) coordinator(t *testing.T, group string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := e.client(t).FindCoordinator(ctx, &kafkago.FindCoordinatorRequest{
		Addr: kafkago.TCP(e.brokers[0]), Key: group, KeyType: kafkago.CoordinatorKeyTypeConsumer})
	if err != nil || res.Error != nil || res.Coordinator == nil {
		return -1
	}
	return int(res.Coordinator.NodeID)
}

// leaders returns the leader node of each partition of topic.
func (e *clusterEnv) leaders(t *testing.T, topic string) map[int]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	md, err := e.client(t).Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil {
		t.Fatalf("metadata of %s: %v %+v", topic, err, md)
	}
	out := map[int]int{}
	for _, p := range md.Topics[0].Partitions {
		out[p.ID] = p.Leader.ID
	}
	return out
}

// waitFullISR waits (at most 90s) until every partition of topics has a
// leader and three in-sync replicas.
func (e *clusterEnv) waitFullISR(t *testing.T, topics ...string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		md, err := e.client(t).Metadata(ctx, &kafkago.MetadataRequest{Topics: topics})
		cancel()
		last = ""
		switch {
		case err != nil:
			last = err.Error()
		case len(md.Topics) != len(topics):
			last = fmt.Sprintf("%d of %d topics in the metadata", len(md.Topics), len(topics))
		}
		for _, tp := range md.Topics {
			if last != "" {
				break
			}
			if tp.Error != nil {
				last = fmt.Sprintf("%s: %v", tp.Name, tp.Error)
				break
			}
			for _, p := range tp.Partitions {
				if p.Leader.ID < 0 || len(p.Isr) != 3 {
					last = fmt.Sprintf("%s/%d: leader %d, isr %d", tp.Name, p.ID, p.Leader.ID, len(p.Isr))
					break
				}
			}
		}
		if last == "" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("topics %v never had three in-sync replicas everywhere: %s", topics, last)
}

// clRecord is one record read back from a topic.
type clRecord struct {
	partition int
	offset    int64
	id        string
	attempts  int
}

// readAll reads every partition of topic from its start to its high
// watermark (at most 90s).
func (e *clusterEnv) readAll(t *testing.T, topic string, partitions int) []clRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for p := 0; p < partitions; p++ {
		req.Topics[topic] = append(req.Topics[topic], kafkago.LastOffsetOf(p))
	}
	res, err := e.client(t).ListOffsets(ctx, req)
	if err != nil {
		t.Fatalf("high watermarks of %s: %v", topic, err)
	}
	var (
		mu  sync.Mutex
		out []clRecord
		wg  sync.WaitGroup
		bad atomic.Value
	)
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			t.Fatalf("high watermark of %s/%d: %v", topic, po.Partition, po.Error)
		}
		if po.LastOffset <= 0 {
			continue
		}
		wg.Add(1)
		go func(p int, end int64) {
			defer wg.Done()
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: e.brokers, Topic: topic, Partition: p,
				MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 200 * time.Millisecond})
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					bad.Store(fmt.Errorf("reading %s/%d: %w", topic, p, err))
					return
				}
				rec := clRecord{partition: p, offset: m.Offset}
				for _, h := range m.Headers {
					switch h.Key {
					case wire.HeaderMessageID:
						rec.id = string(h.Value)
					case wire.HeaderAttempts:
						rec.attempts, _ = strconv.Atoi(string(h.Value))
					}
				}
				mu.Lock()
				out = append(out, rec)
				mu.Unlock()
				if m.Offset >= end-1 {
					return
				}
			}
		}(po.Partition, po.LastOffset)
	}
	wg.Wait()
	if err, _ := bad.Load().(error); err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].partition != out[j].partition {
			return out[i].partition < out[j].partition
		}
		return out[i].offset < out[j].offset
	})
	return out
}

// logTail is a log destination that counts lines and keeps the first few.
type logTail struct {
	mu     sync.Mutex
	n      int
	lines  []string
	reinj  []string // the first lines of the Reinjector (re-inject ...)
	latest []string // the last lines
}

func (l *logTail) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(errFirstAttempt.Error())) {
		return len(p), nil // the handler's planned failures
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	line := strings.TrimSpace(string(p))
	if len(l.lines) < 12 {
		l.lines = append(l.lines, line)
	}
	if strings.Contains(line, "re-inject") && len(l.reinj) < 20 {
		l.reinj = append(l.reinj, line)
	}
	if l.latest = append(l.latest, line); len(l.latest) > 12 {
		l.latest = l.latest[1:]
	}
	return len(p), nil
}

func (l *logTail) report(t *testing.T, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%s: %d warning/error log lines; first ones:", name, l.n)
	for _, s := range l.lines {
		t.Logf("  %s", s)
	}
	if len(l.reinj) > 0 {
		t.Logf("%s: the Reinjector's first lines:", name)
		for _, s := range l.reinj {
			t.Logf("  %s", s)
		}
	}
	if l.n > len(l.lines) {
		t.Logf("%s: the last lines:", name)
		for _, s := range l.latest {
			t.Logf("  %s", s)
		}
	}
}

// hkey names one delivery of a message: its id and attempts.
type hkey struct {
	id       string
	attempts int
}

type pubRec struct {
	start, end time.Time
	err        error
}

// ledger records every publish and every handler run of a workload.
type ledger struct {
	mu      sync.Mutex
	pub     map[string]pubRec
	handled map[hkey][]time.Time // handler return times
	times   []time.Time          // every handler return, in order
	errs    *logTail             // failed publishes are described here
}

func newLedger() *ledger {
	return &ledger{pub: map[string]pubRec{}, handled: map[hkey][]time.Time{}}
}

func (l *ledger) handle(k hkey) {
	now := time.Now()
	l.mu.Lock()
	l.handled[k] = append(l.handled[k], now)
	l.times = append(l.times, now)
	l.mu.Unlock()
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.times)
}

// unhandled returns the acknowledged publishes for which ok (called
// without l.mu held) is false.
func (l *ledger) unhandled(ok func(id string) bool) []string {
	l.mu.Lock()
	var acked []string
	for id, p := range l.pub {
		if p.err == nil {
			acked = append(acked, id)
		}
	}
	l.mu.Unlock()
	var out []string
	for _, id := range acked {
		if !ok(id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// duplicates describes up to n keys handled more than once, with the
// times of their handler runs.
func (l *ledger) duplicates(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, ts := range l.handled {
		if len(ts) < 2 {
			continue
		}
		at := make([]string, len(ts))
		for i, x := range ts {
			at[i] = x.Format("15:04:05.000")
		}
		out = append(out, fmt.Sprintf("%s attempts=%d handled %d times at %s", k.id, k.attempts, len(ts), strings.Join(at, ", ")))
	}
	sort.Strings(out)
	return out[:min(n, len(out))]
}

// produce runs workers goroutines that each publish one envelope every
// every, with ids prefix-w-i, until ctx ends or max publishes were made in
// all; each publish waits at most 20s. It returns when they all stopped.
func (l *ledger) produce(ctx context.Context, app *babelqueue.App, prefix string, workers int, every time.Duration, max int64) {
	var n atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && n.Add(1) <= max; i++ {
				id := fmt.Sprintf("%s-%d-%06d", prefix, w, i)
				start := time.Now()
				pctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := app.Publish(pctx, clusterURN, map[string]int{"w": w, "i": i},
					babelqueue.WithEnvelopeOptions(babelqueue.WithID(id)))
				cancel()
				l.mu.Lock()
				l.pub[id] = pubRec{start: start, end: time.Now(), err: err}
				l.mu.Unlock()
				if err != nil && l.errs != nil {
					fmt.Fprintf(l.errs, "publish %s failed after %v: %v\n", id, time.Since(start).Round(time.Millisecond), err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(every):
				}
			}
		}(w)
	}
	wg.Wait()
}

// supervise runs app.Consume(queue) until ctx ends, starting it again when
// it returns an error (as a service's supervisor would); restarts counts
// those. The returned channel closes when it stopped.
func supervise(ctx context.Context, app *babelqueue.App, queue string, restarts *atomic.Int64, errs *logTail) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			err := app.Consume(ctx, queue)
			if ctx.Err() != nil {
				return
			}
			restarts.Add(1)
			fmt.Fprintf(errs, "Consume(%s) returned: %v\n", queue, err)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return done
}

// commitSample is the committed offsets of a group read at one moment.
type commitSample struct {
	at      time.Time // just after the broker answered
	offsets map[int]int64
	ends    map[int]int64 // high watermarks of the ends topic, read after the offsets
}

// sampleCommits reads the committed offsets of group on topic every 200ms
// until ctx ends, and returns the samples and the failed reads. With an
// ends topic, each sample also holds that topic's high watermarks, read
// just after the committed offsets.
func (e *clusterEnv) sampleCommits(t *testing.T, ctx context.Context, group, topic string, partitions int, ends ...string) func() ([]commitSample, int) {
	var (
		mu      sync.Mutex
		samples []commitSample
		fails   int
		done    = make(chan struct{})
	)
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	go func() {
		defer close(done)
		client := e.client(t)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			res, err := client.OffsetFetch(rctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
			cancel()
			at := time.Now()
			if err == nil && res.Error != nil && !errors.Is(res.Error, kafkago.GroupIdNotFound) {
				err = res.Error
			}
			if err != nil {
				mu.Lock()
				fails++
				mu.Unlock()
				client = e.client(t) // fresh connections and coordinator
				continue
			}
			s := commitSample{at: at, offsets: map[int]int64{}}
			for _, p := range res.Topics[topic] {
				if p.Error == nil {
					s.offsets[p.Partition] = p.CommittedOffset
				}
			}
			if len(ends) > 0 {
				if s.ends, err = highWatermarks(ctx, client, ends[0], partitions); err != nil {
					mu.Lock()
					fails++
					mu.Unlock()
					client = e.client(t)
					continue
				}
			}
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}
	}()
	return func() ([]commitSample, int) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples, fails
	}
}

// highWatermarks returns the end offset of each partition of topic.
func highWatermarks(ctx context.Context, client *kafkago.Client, topic string, partitions int) (map[int]int64, error) {
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for p := 0; p < partitions; p++ {
		req.Topics[topic] = append(req.Topics[topic], kafkago.LastOffsetOf(p))
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res, err := client.ListOffsets(rctx, req)
	if err != nil {
		return nil, err
	}
	out := map[int]int64{}
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, po.Error
		}
		out[po.Partition] = po.LastOffset
	}
	if len(out) != partitions {
		return nil, fmt.Errorf("%d of %d high watermarks of %s", len(out), partitions, topic)
	}
	return out, nil
}

// commitsAheadOfCopies checks the commits of a Reinjector: a tier record
// below its committed offset must already have its copy in the work topic
// (same id and attempts), below the work topic's high watermark read just
// after that commit. Copies are counted per key as in commitsAhead.
func commitsAheadOfCopies(samples []commitSample, tier, work []clRecord) []string {
	var bad []string
	for _, s := range samples {
		need := map[hkey]int{}
		for _, r := range tier {
			if c, ok := s.offsets[r.partition]; ok && r.offset < c {
				need[hkey{r.id, r.attempts}]++
			}
		}
		if len(need) == 0 {
			continue
		}
		have := map[hkey]int{}
		for _, r := range work {
			if k := (hkey{r.id, r.attempts}); need[k] > 0 && r.offset < s.ends[r.partition] {
				have[k]++
			}
		}
		for k, n := range need {
			if have[k] < n {
				bad = append(bad, fmt.Sprintf("at %s the commits (%v) passed %d tier copies of %s attempts=%d, but the work topic (ends %v) held %d",
					s.at.Format("15:04:05.000"), s.offsets, n, k.id, k.attempts, s.ends, have[k]))
			}
		}
	}
	return bad
}

// commitsAhead checks every sample against the records of a topic: a
// committed offset c of partition p says every record of p below c was
// settled, so each must have been settled before the sample was read. A
// record is known by its id and attempts, and a topic may hold copies of
// one (a producer's retry, a redelivery carried twice): at each sample, the
// copies of a key below the committed offsets must not outnumber the
// settlements of that key made before the sample. settledBefore(k, at)
// counts those settlements. It returns the violations, described.
func commitsAhead(samples []commitSample, recs []clRecord, settledBefore func(k hkey, at time.Time) int) []string {
	last := map[int]int64{}
	for _, r := range recs {
		if r.offset > last[r.partition] {
			last[r.partition] = r.offset
		}
	}
	var bad []string
	for _, s := range samples {
		for p, c := range s.offsets {
			if end, ok := last[p]; c > 0 && (!ok || c > end+1) {
				bad = append(bad, fmt.Sprintf("partition %d committed %d, past its last record %d", p, c, end))
			}
		}
		need := map[hkey]int{}
		for _, r := range recs {
			if c, ok := s.offsets[r.partition]; ok && r.offset < c {
				need[hkey{r.id, r.attempts}]++
			}
		}
		for k, n := range need {
			if got := settledBefore(k, s.at); got < n {
				bad = append(bad, fmt.Sprintf("at %s the commits (%v) passed %d copies of %s attempts=%d, but only %d were settled by then",
					s.at.Format("15:04:05.000"), s.offsets, n, k.id, k.attempts, got))
			}
		}
	}
	return bad
}

// settledByHandler is the settledBefore function of commitsAhead for a
// work topic consumed by an App: the handler runs of the key that returned
// before at (the handler returns before the App settles).
func (l *ledger) settledByHandler(k hkey, at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.handled[k] {
		if x.Before(at) {
			n++
		}
	}
	return n
}

// maxGap returns the longest interval between consecutive times of ts
// (sorted here) that ends after from.
func maxGap(ts []time.Time, from time.Time) time.Duration {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	var g time.Duration
	for i := 1; i < len(s); i++ {
		if s[i].After(from) && s[i].Sub(s[i-1]) > g {
			g = s[i].Sub(s[i-1])
		}
	}
	return g
}

// newClusterTransport builds a transport on all three listeners, writes
// acknowledged by every in-sync replica (acks=all), closed at cleanup.
func newClusterTransport(t *testing.T, e *clusterEnv, logs *logTail, opts ...kafka.Option) *kafka.Transport {
	t.Helper()
	base := []kafka.Option{kafka.WithBrokers(e.brokers...), kafka.WithRequiredAcks(kafkago.RequireAll),
		kafka.WithLogger(slogTo(logs))}
	tr, err := kafka.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// slogTo logs warnings and errors into l.
func slogTo(l *logTail) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func clusterName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
}

// waitFor polls cond every 100ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// TestClusterCheckCommitsAhead proves the commit check catches a commit
// that passed a record not yet handled, and accepts copies of one id each
// handled before the commit. It needs no cluster.
func TestClusterCheckCommitsAhead(t *testing.T) {
	t0 := time.Now()
	recs := []clRecord{{partition: 0, offset: 0, id: "a"}, {partition: 0, offset: 1, id: "b"}, {partition: 0, offset: 2, id: "b"}}
	handled := map[hkey][]time.Time{
		{"a", 0}: {t0.Add(1 * time.Millisecond)},
		{"b", 0}: {t0.Add(2 * time.Millisecond), t0.Add(5 * time.Millisecond)},
	}
	before := func(k hkey, at time.Time) int {
		n := 0
		for _, x := range handled[k] {
			if x.Before(at) {
				n++
			}
		}
		return n
	}
	ok := []commitSample{{at: t0.Add(3 * time.Millisecond), offsets: map[int]int64{0: 2}}, {at: t0.Add(6 * time.Millisecond), offsets: map[int]int64{0: 3}}}
	if bad := commitsAhead(ok, recs, before); len(bad) != 0 {
		t.Fatalf("settled commits reported ahead: %v", bad)
	}
	// At 4ms only one copy of b was handled, but offset 3 covers both.
	ahead := []commitSample{{at: t0.Add(4 * time.Millisecond), offsets: map[int]int64{0: 3}}}
	if bad := commitsAhead(ahead, recs, before); len(bad) != 1 {
		t.Fatalf("a commit past an unhandled copy: %d violations reported, want 1: %v", len(bad), bad)
	}
	past := []commitSample{{at: t0.Add(time.Second), offsets: map[int]int64{0: 4}}}
	if bad := commitsAhead(past, recs, before); len(bad) == 0 {
		t.Fatal("a commit past the partition's last record was not reported")
	}

	// A Reinjector's commit must not pass a tier record whose copy is not
	// yet below the work topic's high watermark.
	tier := []clRecord{{partition: 0, offset: 0, id: "a", attempts: 1}, {partition: 0, offset: 1, id: "b", attempts: 1}}
	work := []clRecord{{partition: 1, offset: 7, id: "a", attempts: 1}, {partition: 2, offset: 3, id: "b", attempts: 1}}
	fine := []commitSample{{offsets: map[int]int64{0: 2}, ends: map[int]int64{1: 8, 2: 4}}}
	if bad := commitsAheadOfCopies(fine, tier, work); len(bad) != 0 {
		t.Fatalf("carried records reported ahead: %v", bad)
	}
	early := []commitSample{{offsets: map[int]int64{0: 2}, ends: map[int]int64{1: 8, 2: 3}}}
	if bad := commitsAheadOfCopies(early, tier, work); len(bad) != 1 {
		t.Fatalf("a tier commit past a record not yet carried: %d violations reported, want 1: %v", len(bad), bad)
	}
}
