//go:build integration

package pulsar

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// The broker benchmarks run only with BQ_BENCH=1 (make bench). Each is
// bounded in message count and wall time, and compares the binding with
// raw pulsar-client-go in the same run, on the same broker, with the same
// producer settings, payload and concurrency.
//
// The machine they run on is shared and small, so one timing says little:
// a throughput benchmark runs several rounds (publish after an uncounted
// warm-up), each a pair of one ours and one raw run back to back in an
// order that alternates, prints every round as a "bench-round:" line, and
// reports on its "bench:" line the median of the ours runs, the median of
// the raw runs and the median of the per-round ratios ours/raw.

const (
	benchConcurrency = 32
	benchPhaseLimit  = 60 * time.Second

	// benchPublishMessages and benchPublishRounds size each publish
	// throughput comparison: about one second per round.
	benchPublishMessages = 5000
	benchPublishRounds   = 11
	// benchPublishPropsRounds sizes the comparison with a raw producer
	// that sets the contract's properties by hand, which is informative
	// only.
	benchPublishPropsRounds = 7
	// benchConsumeMessages and benchConsumeRounds size the consume
	// throughput benchmark, whose rounds also fill a topic each.
	benchConsumeMessages = 6000
	benchConsumeRounds   = 11
	// benchWarmupMessages is the size of the uncounted warm-up runs.
	benchWarmupMessages = 1000
)

func benchEnabled(t *testing.T) {
	if os.Getenv("BQ_BENCH") != "1" {
		t.Skip("set BQ_BENCH=1 to run the broker benchmarks")
	}
}

func benchBody(t *testing.T, queue string) string {
	env, err := babelqueue.Make("urn:babel:bench:ping", map[string]any{"order_id": 1042, "note": "benchmark"}, babelqueue.WithQueue(queue))
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// concurrently runs send n times from benchConcurrency goroutines and
// returns messages per second.
func concurrently(t *testing.T, n int, send func(ctx context.Context) error) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	var left atomic.Int64
	left.Store(int64(n))
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < benchConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := send(ctx); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("send: %v", err)
	}
	return float64(n) / el.Seconds()
}

// pairedMetrics runs ours and raw rounds times each, in pairs whose order
// alternates. A run measures several metrics at once: the i-th value of a
// run belongs to names[i], and each name gets a "bench-round:" line per
// pair and then its "bench:" line: the median of the ours values, the
// median of the raw values and the median of the per-pair ratios ours/raw.
// Pairing and medians keep a shared, loaded machine from deciding the
// result: one slow run moves neither. A metric a run reports as 0 (not
// measured on this platform) is left out.
func pairedMetrics(names []string, rounds int, ours, raw func() []float64) {
	oursV := make([][]float64, len(names))
	rawV := make([][]float64, len(names))
	ratios := make([][]float64, len(names))
	for round := 1; round <= rounds; round++ {
		var a, b []float64
		order := "ours-first"
		if round%2 == 1 {
			a = ours()
			b = raw()
		} else {
			order = "raw-first"
			b = raw()
			a = ours()
		}
		for i, name := range names {
			if a[i] == 0 || b[i] == 0 {
				continue
			}
			oursV[i], rawV[i], ratios[i] = append(oursV[i], a[i]), append(rawV[i], b[i]), append(ratios[i], a[i]/b[i])
			fmt.Printf("bench-round: %s round=%d order=%s ours=%.0f raw=%.0f ratio=%.2f\n", name, round, order, a[i], b[i], a[i]/b[i])
		}
	}
	for i, name := range names {
		if len(ratios[i]) == 0 {
			continue
		}
		fmt.Printf("bench: %s ours=%.0f raw=%.0f ratio=%.2f\n", name, brokertest.Median(oursV[i]), brokertest.Median(rawV[i]), brokertest.Median(ratios[i]))
	}
}

// rates returns n messages over wall, and over cpu when cpu is known (else
// 0): messages per second and per CPU-second of this process.
func rates(n int, wall, cpu time.Duration, cpuKnown bool) []float64 {
	out := []float64{float64(n) / wall.Seconds(), 0}
	if cpuKnown && cpu > 0 {
		out[1] = float64(n) / cpu.Seconds()
	}
	return out
}

// processCPU returns bqtest.ProcessCPU, and false where the platform does
// not tell the process's CPU time.
func processCPU() (time.Duration, bool) {
	d := bqtest.ProcessCPU()
	return d, d > 0
}

func benchProducerOptions(topic string) pulsar.ProducerOptions {
	return pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: DefaultBatchingMaxPublishDelay}
}

// TestBenchPulsarPublishThroughput compares Publish with a raw producer
// sending the same payload (pulsar-publish-throughput), and, to tell the
// binding's own cost from the cost of what the contract puts on every
// message, with a raw producer that also sets the same properties and
// event time by hand (pulsar-publish-throughput-raw-same-properties).
func TestBenchPulsarPublishThroughput(t *testing.T) {
	benchEnabled(t)
	c := rawClient(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	oursQ, rawQ, propsQ := uniqueQueue(t), uniqueQueue(t), uniqueQueue(t)
	body := benchBody(t, oursQ)
	projection := wire.ProjectBody([]byte(body))
	props := map[string]string{}
	for _, h := range projection.Headers() {
		props[h.Key] = h.Value
	}
	raw, err := c.CreateProducer(benchProducerOptions(rawQ))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rawProps, err := c.CreateProducer(benchProducerOptions(propsQ))
	if err != nil {
		t.Fatal(err)
	}
	defer rawProps.Close()
	sendOurs := func(ctx context.Context) error { return tr.Publish(ctx, oursQ, body) }
	sendRaw := func(ctx context.Context) error {
		_, err := raw.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(body)})
		return err
	}
	sendRawProps := func(ctx context.Context) error {
		m := make(map[string]string, len(props))
		for k, v := range props {
			m[k] = v
		}
		_, err := rawProps.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(body), Properties: m,
			EventTime: time.UnixMilli(projection.CreatedAt)})
		return err
	}
	// Warm up the producers (connection, topic creation, the broker's code
	// paths) without counting it.
	for _, send := range []func(context.Context) error{sendOurs, sendRaw, sendRawProps} {
		concurrently(t, benchWarmupMessages, send)
	}
	// Each run also gives messages per CPU-second of this process (only the
	// timed side is busy then): the -cpu-throughput lines, which a loaded
	// host changes much less than the rates.
	// Each run also counts the allocations of this process per message
	// (informative: the "bench-alloc:" lines give each side's median), and
	// the CPU the test broker's JVM used per message while it ran (the
	// "bench-broker:" lines, informative too: the broker is shared, so
	// other traffic lands in it).
	allocs := map[string][][3]float64{}
	brokerPID := pulsarBrokerPID()
	run := func(side string, send func(context.Context) error) func() []float64 {
		return func() []float64 {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			broker0 := bqtest.PidCPU(brokerPID)
			cpu0, cpuKnown := processCPU()
			start := time.Now()
			concurrently(t, benchPublishMessages, send)
			wall := time.Since(start)
			cpu1, _ := processCPU()
			broker1 := bqtest.PidCPU(brokerPID)
			runtime.ReadMemStats(&m1)
			allocs[side] = append(allocs[side], [3]float64{
				float64(m1.Mallocs-m0.Mallocs) / benchPublishMessages, float64(m1.TotalAlloc-m0.TotalAlloc) / benchPublishMessages,
				float64((broker1 - broker0).Microseconds()) / benchPublishMessages})
			return rates(benchPublishMessages, wall, cpu1-cpu0, cpuKnown)
		}
	}
	pairedMetrics([]string{"pulsar-publish-throughput", "pulsar-publish-cpu-throughput"}, benchPublishRounds,
		run("ours", sendOurs), run("raw", sendRaw))
	pairedMetrics([]string{"pulsar-publish-throughput-raw-same-properties", "pulsar-publish-cpu-throughput-raw-same-properties"},
		benchPublishPropsRounds, run("ours", sendOurs), run("raw-same-properties", sendRawProps))
	for _, side := range []string{"ours", "raw", "raw-same-properties"} {
		var n, b, broker []float64
		for _, v := range allocs[side] {
			n, b, broker = append(n, v[0]), append(b, v[1]), append(broker, v[2])
		}
		fmt.Printf("bench-alloc: pulsar-publish side=%s allocs-per-msg=%.1f bytes-per-msg=%.0f\n", side, brokertest.Median(n), brokertest.Median(b))
		if brokerPID > 0 {
			fmt.Printf("bench-broker: pulsar-publish side=%s broker-cpu-us-per-msg=%.1f\n", side, brokertest.Median(broker))
		}
	}
}

// TestBenchPulsarConsumeThroughput compares a Consumer (the App with a
// handler that does nothing, over the Transport) with a raw consumer that
// receives and acknowledges every message (pulsar-consume-throughput).
//
// It measures the case where the client's CPU is the limit: each side
// subscribes to a new topic before it is filled, so that the broker
// serves every message from memory, and the clock runs from the first
// receive to the last. Rounds are paired and their order alternates (see
// pairedMetrics), after an uncounted warm-up pair.
//
// Each run also reads the CPU time the test process spent in it (both
// clients live in this process, and only the timed side is busy then), for
// pulsar-consume-cpu-throughput: messages per CPU-second. A busy machine
// stretches the wall time of a run much more than its CPU time, so that
// ratio is the steadier measure of the per-message work on the client.
func TestBenchPulsarConsumeThroughput(t *testing.T) {
	benchEnabled(t)
	b := newConsumeBench(t)
	b.ours(benchWarmupMessages, 0, nil)
	b.raw(benchWarmupMessages)
	pairedMetrics([]string{"pulsar-consume-throughput", "pulsar-consume-cpu-throughput"}, benchConsumeRounds,
		func() []float64 { return b.ours(benchConsumeMessages, 0, nil) },
		func() []float64 { return b.raw(benchConsumeMessages) })
}

// consumeBench is the fixture of the consume benchmarks: a raw client, and
// the projected envelope every message carries.
type consumeBench struct {
	t     *testing.T
	c     pulsar.Client
	body  []byte
	props map[string]string
	// keys, when above 0, keys the messages round robin over that many keys.
	keys int
	// brokerPID is the test broker JVM's pid (0 when unknown), whose CPU
	// time the timed phases read; last is what the latest timed phase
	// measured besides its rate.
	brokerPID int
	last      phaseStats
	// batchedFill makes the fill send asynchronously, so that the producer
	// packs messages into batches with the client's default batching (up
	// to 1000 messages or 128 KB per entry, 10 ms), as a bulk producer
	// does; without it every message is an entry of its own (synchronous
	// sends, each flushed at once).
	batchedFill bool
	// timed, when set, is called with true as a timed phase starts and
	// with false once its last message is handled (the side benchmark's
	// profile and counters).
	timed func(start bool)
	// rawClient, when set, gives the client the raw side subscribes with
	// (else c, which also fills).
	rawClient func() pulsar.Client
	// prefetch switches ours to prefetching on a goroutine of its own, as
	// the concurrent loop does (the side benchmark's comparison).
	prefetch     bool
	lastCounters sideCounters
}

func newConsumeBench(t *testing.T) *consumeBench {
	b := &consumeBench{t: t, c: rawClient(t), body: []byte(benchBody(t, "bench")), props: map[string]string{},
		brokerPID: pulsarBrokerPID()}
	for _, h := range wire.ProjectBody(b.body).Headers() {
		b.props[h.Key] = h.Value
	}
	return b
}

// fill writes n projected envelopes to topic from benchConcurrency
// concurrent publishers, untimed, lets the subscribed consumer's receive
// queue fill, and collects the garbage the writes left.
func (b *consumeBench) fill(topic string, n int) {
	t := b.t
	opts := benchProducerOptions(topic)
	if b.batchedFill {
		opts.BatchingMaxPublishDelay = 0 // the client's default, 10 ms
	}
	p, err := b.c.CreateProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var seq atomic.Int64
	message := func() *pulsar.ProducerMessage {
		m := &pulsar.ProducerMessage{Payload: b.body, Properties: b.props}
		if b.keys > 0 {
			m.Key = fmt.Sprintf("key-%d", seq.Add(1)%int64(b.keys))
		}
		return m
	}
	if b.batchedFill {
		b.fillBatched(p, n, message)
	} else {
		concurrently(t, n, func(ctx context.Context) error {
			_, err := p.Send(ctx, message())
			return err
		})
	}
	time.Sleep(200 * time.Millisecond)
	// The fill's garbage is not what a round measures: collect it here, on
	// both sides, rather than in the timed section (as the Kafka benches do).
	runtime.GC()
}

// fillBatched writes n messages with asynchronous sends, which the
// producer packs into batches (one entry each), and waits for all of them.
func (b *consumeBench) fillBatched(p pulsar.Producer, n int, message func() *pulsar.ProducerMessage) {
	t := b.t
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Value
	for range n {
		wg.Add(1)
		p.SendAsync(ctx, message(), func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	if err := p.FlushWithCtx(ctx); err != nil {
		t.Fatalf("fill: flush: %v", err)
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("fill: send: %v", err)
	}
}

// ours consumes n messages through a Consumer (App) on a Shared
// subscription (or the subscription type trOpts set) with appOpts, whose
// handler sleeps delay (none when 0), and returns messages per second
// over wall time and over this process's CPU time.
func (b *consumeBench) ours(n int, delay time.Duration, trOpts []Option, appOpts ...babelqueue.Option) []float64 {
	t := b.t
	trOpts = append([]Option{WithSubscriptionType(pulsar.Shared)}, trOpts...)
	// A Transport (and client) per round, as the raw side has a
	// consumer per round; both are closed when the round ends.
	tr := newIntegrationTransport(t, trOpts...)
	defer tr.Close()
	q := uniqueQueue(t)
	if _, err := tr.consumerFor(q); err != nil {
		t.Fatal(err)
	}
	if b.prefetch {
		tr.NotifyReady(q, func() {})
	}
	b.fill(q, n)
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	var handled, slept atomic.Int64
	var el atomic.Int64
	var start time.Time
	var host0 hostCPU
	var cpu0 time.Duration
	var cpuKnown bool
	var ended phaseEnd
	cons := NewConsumer(tr, q, map[string]babelqueue.Handler{
		"urn:babel:bench:ping": func(context.Context, *babelqueue.Envelope) error {
			if delay > 0 {
				s := time.Now()
				time.Sleep(delay)
				slept.Add(int64(time.Since(s)))
			}
			if handled.Add(1) == int64(n) {
				el.Store(int64(time.Since(start)))
				ended.mark(b.brokerPID)
				if b.timed != nil {
					b.timed(false)
				}
				cancel()
			}
			return nil
		},
	}, appOpts...)
	if b.timed != nil {
		b.timed(true)
	}
	host0 = readHostCPU(b.brokerPID)
	cpu0, cpuKnown = processCPU()
	start = time.Now()
	if err := cons.Run(ctx); err != nil {
		t.Fatal(err)
	}
	cpu1, _ := processCPU()
	if got := handled.Load(); got < int64(n) {
		t.Fatalf("handled %d of %d messages in %v", got, n, benchPhaseLimit)
	}
	wall := time.Duration(el.Load())
	b.last = phaseStats{n: n, wall: wall, host: ended.host.minus(host0), cpu: ended.cpu - cpu0, cpuKnown: cpuKnown,
		slept: time.Duration(slept.Load())}
	return rates(n, wall, cpu1-cpu0, cpuKnown)
}

// rawFilled subscribes a raw Shared consumer to a new topic and fills the
// topic with n messages; the caller closes the consumer.
func (b *consumeBench) rawFilled(n int) pulsar.Consumer {
	q := uniqueQueue(b.t)
	c := b.c
	if b.rawClient != nil {
		c = b.rawClient()
	}
	rc, err := c.Subscribe(pulsar.ConsumerOptions{Topic: q, SubscriptionName: DefaultSubscription, Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		b.t.Fatal(err)
	}
	b.fill(q, n)
	return rc
}

// raw consumes n messages with a raw Shared consumer, receive then ack.
func (b *consumeBench) raw(n int) []float64 {
	t := b.t
	rc := b.rawFilled(n)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	if b.timed != nil {
		b.timed(true)
	}
	host0 := readHostCPU(b.brokerPID)
	cpu0, cpuKnown := processCPU()
	start := time.Now()
	for i := 0; i < n; i++ {
		m, err := rc.Receive(ctx)
		if err != nil {
			t.Fatalf("raw receive %d: %v", i, err)
		}
		if err := rc.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	el := time.Since(start)
	cpu1, _ := processCPU()
	host1 := readHostCPU(b.brokerPID)
	if b.timed != nil {
		b.timed(false)
	}
	b.last = phaseStats{n: n, wall: el, host: host1.minus(host0), cpu: cpu1 - cpu0, cpuKnown: cpuKnown}
	return rates(n, el, cpu1-cpu0, cpuKnown)
}

// phaseEnd is the CPU readings taken when a timed phase's last message is
// handled (once, by whichever handler finishes it).
type phaseEnd struct {
	host hostCPU
	cpu  time.Duration
}

func (e *phaseEnd) mark(brokerPID int) {
	e.host = readHostCPU(brokerPID)
	e.cpu, _ = processCPU()
}

func (h hostCPU) minus(o hostCPU) hostCPU {
	return hostCPU{busy: h.busy - o.busy, total: h.total - o.total, broker: h.broker - o.broker}
}

// phaseStats is what a timed consume phase measured besides its rate: the
// CPU the machine, the broker and this process used over its wall time,
// and, for handlers that sleep, the time they spent asleep and (raw side)
// waiting in Receive and in Ack, summed over all handlers.
type phaseStats struct {
	n                    int
	wall                 time.Duration
	host                 hostCPU
	cpu                  time.Duration
	cpuKnown             bool
	slept, waited, acked time.Duration
}

// cores returns d over the phase's wall time: how many cores it kept busy.
func (p phaseStats) cores(d time.Duration) float64 { return d.Seconds() / p.wall.Seconds() }

// perMessage returns d spread over the phase's messages, in µs.
func (p phaseStats) perMessage(d time.Duration) float64 {
	return float64(d.Microseconds()) / float64(p.n)
}

// String gives the CPU each party used (in cores, of the machine's
// runtime.NumCPU) and where a handler slot's cycle went: cycle is the
// time one of inFlight slots takes per message (inFlight / rate), sleep
// the measured time.Sleep, wait and ack the raw side's Receive and Ack.
func (p phaseStats) String(inFlight int) string {
	cycle := float64(inFlight) * p.wall.Seconds() * 1e6 / float64(p.n)
	s := fmt.Sprintf("cycle-us=%.0f sleep-us=%.0f not-asleep-us=%.0f", cycle, p.perMessage(p.slept), cycle-p.perMessage(p.slept))
	if p.waited > 0 || p.acked > 0 {
		s += fmt.Sprintf(" receive-wait-us=%.0f ack-us=%.1f", p.perMessage(p.waited), p.perMessage(p.acked))
	}
	if p.host.total > 0 {
		ncpu := float64(runtime.NumCPU())
		s += fmt.Sprintf(" machine-busy-cores=%.2f", ncpu*p.host.busy.Seconds()/p.host.total.Seconds())
	}
	if p.host.broker > 0 {
		s += fmt.Sprintf(" broker-cores=%.2f broker-cpu-us-per-msg=%.0f", p.cores(p.host.broker), p.perMessage(p.host.broker))
	}
	if p.cpuKnown {
		s += fmt.Sprintf(" process-cores=%.2f", p.cores(p.cpu))
	}
	return s
}
