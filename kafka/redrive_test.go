package kafka

// Redrive scenarios. Each runs against a broker given by its addresses:
// the embedded Kafka-protocol broker here (fast, no build tag), the real
// Apache Kafka broker in redrive_integration_test.go. Every check counts
// what is really in the topics: the target, and the DLQ's live region
// (from the cursor to the end).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// rdEnv is a broker to run the scenarios on.
type rdEnv struct {
	brokers []string
	opts    []Option
}

func rdName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func (e rdEnv) transport(t *testing.T) *Transport {
	t.Helper()
	tr, err := New(append([]Option{WithBrokers(e.brokers...), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, e.opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// broker returns the test's own admin connections.
func (e rdEnv) broker(t *testing.T) *redriveBroker {
	cfg := defaultConfig()
	for _, o := range append([]Option{WithBrokers(e.brokers...)}, e.opts...) {
		o(&cfg)
	}
	b := newRedriveBroker(&cfg)
	t.Cleanup(b.close)
	return b
}

func rdCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rdTopics creates a work topic with partitions and its DLQ.
func (e rdEnv) topics(t *testing.T, ctx context.Context, partitions int) (work, dlq string) {
	t.Helper()
	work = rdName("rd")
	if err := e.transport(t).EnsureTopics(ctx, work, partitions, 1); err != nil {
		t.Fatal(err)
	}
	return work, work + DeadLetterSuffix
}

// rdSeed is one record to put in a DLQ.
type rdSeed struct {
	partition int
	key       []byte // nil: a null key
	urn       string
	raw       []byte // a body that is not an envelope, instead of a dead letter
	redrives  int
	headers   []kafkago.Header // extra headers
}

// seed writes the dead letters, each to its partition, as the App would
// have (annotated envelope, CONTRACT.md 6 headers, key), and returns the values.
func (e rdEnv) seed(t *testing.T, ctx context.Context, b *redriveBroker, dlq, work string, seeds ...rdSeed) [][]byte {
	t.Helper()
	var values [][]byte
	for _, s := range seeds {
		rec := redriveRecord{Key: s.key, Time: time.Now()}
		if s.raw != nil {
			rec.Value = s.raw
		} else {
			env, err := babelqueue.Make(s.urn, map[string]any{"n": len(values)}, babelqueue.WithQueue(work))
			if err != nil {
				t.Fatal(err)
			}
			body, err := env.Encode()
			if err != nil {
				t.Fatal(err)
			}
			msg := "boom"
			body, err = wire.AnnotateDeadLetter(body, wire.DeadLetter{Reason: wire.ReasonFailed, Error: &msg,
				FailedAt: time.Now().UnixMilli(), OriginalQueue: work, Attempts: 3})
			if err != nil {
				t.Fatal(err)
			}
			rec.Value = body
			rec.Headers = toKafkaHeaders(wire.ProjectBody(body).Headers())
		}
		rec.Headers = append(rec.Headers, s.headers...)
		if s.redrives > 0 {
			rec.Headers = append(rec.Headers, kafkago.Header{Key: wire.HeaderRedriveCount, Value: []byte(strconv.Itoa(s.redrives))})
		}
		if _, err := b.produce(ctx, dlq, s.partition, rec); err != nil {
			t.Fatalf("seed %s/%d: %v", dlq, s.partition, err)
		}
		values = append(values, rec.Value)
	}
	return values
}

// readAll returns every record of topic, by partition then offset.
func rdRead(t *testing.T, ctx context.Context, b *redriveBroker, topic string, from map[int]int64) []redriveRecord {
	t.Helper()
	parts, err := b.partitions(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	first, next, err := b.bounds(ctx, topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	var out []redriveRecord
	for _, p := range parts {
		start := first[p]
		if o, ok := from[p]; ok && o > start {
			start = o
		}
		if err := b.read(ctx, topic, p, start, next[p], func(r redriveRecord) error { out = append(out, r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// cursorOf returns the committed offsets of cursor on topic (-1: none).
func rdCursor(t *testing.T, ctx context.Context, b *redriveBroker, cursor, topic string) map[int]int64 {
	t.Helper()
	parts, err := b.partitions(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.committed(ctx, cursor, topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int64{}
	for _, p := range parts {
		out[p] = -1
		if v, ok := c[p]; ok {
			out[p] = v.CommittedOffset
		}
	}
	return out
}

// rdLive returns the DLQ's live region: the records at and after the
// default cursor.
func rdLive(t *testing.T, ctx context.Context, b *redriveBroker, dlq string) []redriveRecord {
	return rdRead(t, ctx, b, dlq, rdCursor(t, ctx, b, RedriveCursor(dlq), dlq))
}

func hdr(r redriveRecord, key string) string {
	v, _ := lastHeader(r.Headers, key)
	return v
}

// rdID is the meta.id of a record ("" when undecodable).
func rdID(r redriveRecord) string {
	env, err := babelqueue.Decode(r.Value)
	if err != nil {
		return ""
	}
	return env.Meta.ID
}

func runRedrive(t *testing.T, ctx context.Context, tr *Transport, dlq string, opts ...redrive.Option) *redrive.Result {
	t.Helper()
	res, err := redrive.Run(ctx, tr, dlq, opts...)
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	return res
}

func outcomes(res *redrive.Result) map[redrive.Outcome]int {
	m := map[redrive.Outcome]int{}
	for _, it := range res.Items {
		m[it.Outcome]++
	}
	return m
}

// scenarioMovesKeepsAndSelections: moved copies (key, partition, value,
// headers), kept records written back verbatim, the guard, and a second
// selection that moves nothing twice.
func scenarioMovesKeepsAndSelections(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, 2*time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work, dlq := e.topics(t, ctx, 3)
	binKey := []byte{0x00, 0xff, 'k', 0x80}
	tp := kafkago.Header{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}
	vals := e.seed(t, ctx, b, dlq, work,
		rdSeed{partition: 0, key: []byte("ka1"), urn: "urn:a", headers: []kafkago.Header{tp}},
		rdSeed{partition: 1, key: binKey, urn: "urn:a"},
		rdSeed{partition: 2, key: nil, urn: "urn:a"},
		rdSeed{partition: 0, key: []byte("kb1"), urn: "urn:b", headers: []kafkago.Header{{Key: "x-custom", Value: []byte("c")}}},
		rdSeed{partition: 1, key: []byte("kg1"), urn: "urn:a", redrives: 3},
		rdSeed{partition: 2, key: []byte("kx"), raw: []byte("not json")},
		rdSeed{partition: 0, key: []byte("kv"), urn: "urn:a", headers: []kafkago.Header{{Key: wire.HeaderSchemaVersion, Value: []byte("2")}}},
	)
	dlqBefore := rdRead(t, ctx, b, dlq, nil)
	if len(dlqBefore) != 7 {
		t.Fatalf("DLQ holds %d, want 7", len(dlqBefore))
	}
	var total int
	res := runRedrive(t, ctx, tr, dlq, redrive.WithSelector(redrive.SelectURN("urn:a")), redrive.WithMaxRedrives(3),
		redrive.WithProgress(func(n int) { total = n }, nil))
	if total != 7 || res.Examined != 7 || res.Moved != 3 || res.Kept != 4 || res.Resumed {
		t.Fatalf("first run: total %d, result %+v", total, res)
	}
	wantOut := map[redrive.Outcome]int{redrive.Moved: 3, redrive.Unselected: 1, redrive.Guarded: 1,
		redrive.Undecodable: 1, redrive.UnsupportedVersion: 1}
	if diff := cmp.Diff(wantOut, outcomes(res)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	for _, it := range res.Items {
		if it.Position == "" || (it.Outcome == redrive.Guarded && it.Redrives != 3) {
			t.Errorf("item %+v", it)
		}
	}

	// The target: three copies, key byte for byte, on the key's partition.
	target := rdRead(t, ctx, b, work, nil)
	if len(target) != 3 {
		t.Fatalf("target holds %d records, want 3", len(target))
	}
	byKey := map[string]redriveRecord{}
	for _, r := range target {
		k := "null"
		if r.Key != nil {
			k = hex.EncodeToString(r.Key)
		}
		byKey[k] = r
	}
	for i, s := range []rdSeed{{partition: 0, key: []byte("ka1")}, {partition: 1, key: binKey}, {partition: 2}} {
		k := "null"
		wantPart := s.partition % 3
		if s.key != nil {
			k, wantPart = hex.EncodeToString(s.key), PartitionForKey(s.key, 3)
		}
		r, ok := byKey[k]
		if !ok {
			t.Fatalf("no copy with key %s among %d", k, len(target))
		}
		if r.Partition != wantPart {
			t.Errorf("copy of key %s on partition %d, want %d", k, r.Partition, wantPart)
		}
		cleared, err := wire.ClearDeadLetter(vals[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Value, cleared) {
			t.Errorf("copy value %s, want %s", r.Value, cleared)
		}
		if hdr(r, wire.HeaderAttempts) != "0" || hdr(r, wire.HeaderRedriveCount) != "1" || hdr(r, wire.HeaderJob) != "urn:a" ||
			hdr(r, wire.HeaderMessageID) != rdID(r) || hdr(r, wire.HeaderRedriveSource) == "" {
			t.Errorf("copy headers %v", r.Headers)
		}
		if i == 0 && hdr(r, "traceparent") != string(tp.Value) {
			t.Errorf("traceparent not kept: %v", r.Headers)
		}
		seen := map[string]bool{}
		for _, h := range r.Headers {
			if seen[h.Key] {
				t.Errorf("header %s twice in %v", h.Key, r.Headers)
			}
			seen[h.Key] = true
		}
	}

	// The live region holds exactly the four that stay, verbatim.
	live := rdLive(t, ctx, b, dlq)
	if len(live) != 4 {
		t.Fatalf("DLQ live region holds %d, want 4", len(live))
	}
	orig := map[string]redriveRecord{}
	for _, r := range dlqBefore {
		orig[redriveSource(dlq, r.Partition, r.Offset)] = r
	}
	for _, r := range live {
		src := hdr(r, wire.HeaderRedriveSource)
		o, ok := orig[src]
		if !ok {
			t.Fatalf("kept record with source %q", src)
		}
		if !bytes.Equal(o.Key, r.Key) || !bytes.Equal(o.Value, r.Value) || r.Partition != o.Partition {
			t.Errorf("kept record differs: %q/%q on %d, was %q/%q on %d", r.Key, r.Value, r.Partition, o.Key, o.Value, o.Partition)
		}
		want := append(append([]kafkago.Header(nil), o.Headers...), kafkago.Header{Key: wire.HeaderRedriveSource, Value: []byte(src)})
		if diff := cmp.Diff(want, r.Headers); diff != "" {
			t.Errorf("kept headers (-want +got):\n%s", diff)
		}
	}

	// The same selection again: the four are examined once more, nothing moves.
	res = runRedrive(t, ctx, tr, dlq, redrive.WithSelector(redrive.SelectURN("urn:a")), redrive.WithMaxRedrives(3))
	if res.Examined != 4 || res.Moved != 0 || !res.Resumed {
		t.Errorf("second run %+v", res)
	}
	live = rdLive(t, ctx, b, dlq)
	if len(live) != 4 {
		t.Errorf("DLQ live region holds %d after a second run, want 4", len(live))
	}
	for _, r := range live {
		if n := len(r.Headers); n != len(orig[redriveSource(dlq, 0, 0)].Headers) && hdr(r, wire.HeaderRedriveSource) == "" {
			t.Errorf("headers %v", r.Headers)
		}
		if c := 0; true {
			for _, h := range r.Headers {
				if h.Key == wire.HeaderRedriveSource {
					c++
				}
			}
			if c != 1 {
				t.Errorf("kept record has %d %s headers", c, wire.HeaderRedriveSource)
			}
		}
	}

	// Another selection: only urn:b moves; nothing is moved twice.
	res = runRedrive(t, ctx, tr, dlq, redrive.WithSelector(redrive.SelectURN("urn:b")), redrive.WithMaxRedrives(3))
	if res.Moved != 1 || res.Examined != 4 {
		t.Errorf("urn:b run %+v", res)
	}
	target = rdRead(t, ctx, b, work, nil)
	ids := map[string]int{}
	for _, r := range target {
		ids[rdID(r)]++
	}
	if len(target) != 4 || len(ids) != 4 {
		t.Errorf("target holds %d records of %d messages, want 4 and 4: %v", len(target), len(ids), ids)
	}
	for _, r := range target {
		if string(r.Key) == "kb1" && hdr(r, "x-custom") != "c" {
			t.Errorf("out-of-band header lost: %v", r.Headers)
		}
	}
	if n := len(rdLive(t, ctx, b, dlq)); n != 3 {
		t.Errorf("DLQ live region holds %d, want 3", n)
	}
}

// scenarioDryRun: a dry run writes and commits nothing.
func scenarioDryRun(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work, dlq := e.topics(t, ctx, 2)
	e.seed(t, ctx, b, dlq, work,
		rdSeed{partition: 0, key: []byte("a"), urn: "urn:a"},
		rdSeed{partition: 1, key: []byte("b"), urn: "urn:b"},
		rdSeed{partition: 1, key: []byte("c"), urn: "urn:a"},
	)
	parts := []int{0, 1}
	_, endBefore, err := b.bounds(ctx, dlq, parts)
	if err != nil {
		t.Fatal(err)
	}
	res := runRedrive(t, ctx, tr, dlq, redrive.WithDryRun(), redrive.WithSelector(redrive.SelectURN("urn:a")))
	if !res.DryRun || res.Moved != 2 || res.Examined != 3 || outcomes(res)[redrive.WouldMove] != 2 {
		t.Errorf("dry run %+v", res)
	}
	if n := len(rdRead(t, ctx, b, work, nil)); n != 0 {
		t.Errorf("dry run wrote %d records to the target", n)
	}
	_, endAfter, err := b.bounds(ctx, dlq, parts)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(endBefore, endAfter) {
		t.Errorf("dry run wrote to the DLQ: ends %v then %v", endBefore, endAfter)
	}
	if c := rdCursor(t, ctx, b, RedriveCursor(dlq), dlq); c[0] != -1 || c[1] != -1 {
		t.Errorf("dry run committed the cursor: %v", c)
	}
	// A real run afterwards still finds everything.
	if res := runRedrive(t, ctx, tr, dlq); res.Moved != 3 || res.Resumed {
		t.Errorf("run after the dry run %+v", res)
	}
}

// scenarioMax: Max stops the run with the cursor right after the last
// record handled; a custom cursor is independent.
func scenarioMax(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work, dlq := e.topics(t, ctx, 1)
	e.seed(t, ctx, b, dlq, work,
		rdSeed{key: []byte("0"), urn: "urn:a"},
		rdSeed{key: []byte("1"), urn: "urn:b"},
		rdSeed{key: []byte("2"), urn: "urn:a"},
		rdSeed{key: []byte("3"), urn: "urn:a"},
	)
	sel := redrive.WithSelector(redrive.SelectURN("urn:a"))
	res := runRedrive(t, ctx, tr, dlq, sel, redrive.WithMax(1))
	if res.Moved != 1 || res.Examined != 1 {
		t.Errorf("max 1: %+v", res)
	}
	if c := rdCursor(t, ctx, b, RedriveCursor(dlq), dlq); c[0] != 1 {
		t.Errorf("cursor at %d after max 1, want 1", c[0])
	}
	res = runRedrive(t, ctx, tr, dlq, sel, redrive.WithMax(1))
	if res.Moved != 1 || res.Examined != 2 || !res.Resumed {
		t.Errorf("second max 1: %+v", res)
	}
	if c := rdCursor(t, ctx, b, RedriveCursor(dlq), dlq); c[0] != 3 {
		t.Errorf("cursor at %d, want 3", c[0])
	}
	res = runRedrive(t, ctx, tr, dlq, sel)
	if res.Moved != 1 || res.Examined != 2 {
		t.Errorf("rest: %+v", res)
	}
	if n := len(rdRead(t, ctx, b, work, nil)); n != 3 {
		t.Errorf("target holds %d, want 3", n)
	}
	// The default cursor's live region holds urn:b once (written back
	// twice); a custom cursor starts from the beginning and sees every old
	// copy: the four originals and both write-backs.
	if live := rdLive(t, ctx, b, dlq); len(live) != 1 || string(live[0].Key) != "1" {
		t.Errorf("live region holds %d records", len(live))
	}
	res = runRedrive(t, ctx, tr, dlq, redrive.WithCursor(rdName("other")), redrive.WithDryRun())
	if res.Examined != 6 || res.Resumed || outcomes(res)[redrive.WouldMove] != 6 {
		t.Errorf("custom cursor dry run %+v", res)
	}
}

// errCrash is what the fault hook returns to stop a run at a crash point.
var errCrash = errors.New("simulated crash")

// scenarioCrashPoints interrupts a run at each crash point of a move and
// of a write-back, runs again, and counts: every dead letter once, in the
// target or in the DLQ's live region, never in both, never twice. Two
// layouts: "interleaved" (moves and stays alternate, so each write holds
// one record; the second write of the kind is interrupted) and "runs" (one
// partition with runs of moves and of stays, so a write is a batch of
// several records; the first write of the kind is interrupted).
func scenarioCrashPoints(t *testing.T, e rdEnv) {
	type crashCase struct {
		point, kind, layout string
		nth                 int
		recovered           int // records the second run finds already written
	}
	var cases []crashCase
	for _, kind := range []string{"move", "keep"} {
		cases = append(cases,
			crashCase{redriveAfterPending, kind, "interleaved", 2, 0},
			crashCase{redriveAfterWrite, kind, "interleaved", 2, 1},
			crashCase{redriveAfterPending, kind, "runs", 1, 0},
			crashCase{redriveAfterWrite, kind, "runs", 1, 3},
		)
	}
	for _, c := range cases {
		t.Run(c.layout+"/"+c.point+"/"+c.kind, func(t *testing.T) {
			ctx := rdCtx(t, 2*time.Minute)
			tr := e.transport(t)
			b := e.broker(t)
			var seeds []rdSeed
			var work, dlq string
			if c.layout == "interleaved" {
				work, dlq = e.topics(t, ctx, 2)
				for i := range 8 {
					urn := "urn:a"
					if i%2 == 1 {
						urn = "urn:b"
					}
					seeds = append(seeds, rdSeed{partition: (i / 2) % 2, key: []byte("k" + strconv.Itoa(i)), urn: urn})
				}
			} else {
				work, dlq = e.topics(t, ctx, 1)
				for i, urn := range []string{"urn:a", "urn:a", "urn:a", "urn:b", "urn:b", "urn:b", "urn:a", "urn:a", "urn:b"} {
					seeds = append(seeds, rdSeed{key: []byte("k" + strconv.Itoa(i)), urn: urn})
				}
			}
			vals := e.seed(t, ctx, b, dlq, work, seeds...)
			stays := 0
			for _, s := range seeds {
				if s.urn == "urn:b" {
					stays++
				}
			}
			sel := redrive.WithSelector(redrive.SelectURN("urn:a"))
			if n := len(rdLive(t, ctx, b, dlq)); n != len(seeds) {
				t.Fatalf("live region before: %d", n)
			}

			hits := 0
			redriveFault = func(point, kind string, partition int, offset int64) error {
				if point == c.point && kind == c.kind {
					if hits++; hits == c.nth {
						return errCrash
					}
				}
				return nil
			}
			_, err := redrive.Run(ctx, tr, dlq, sel)
			redriveFault = nil
			if !errors.Is(err, errCrash) {
				t.Fatalf("interrupted run: %v", err)
			}
			afterCrashTarget := len(rdRead(t, ctx, b, work, nil))

			res := runRedrive(t, ctx, tr, dlq, sel)
			if !res.Resumed {
				t.Error("second run did not resume")
			}
			got := outcomes(res)
			want := map[redrive.Outcome]int{redrive.AlreadyMoved: 0, redrive.AlreadyKept: 0}
			if c.kind == "move" {
				want[redrive.AlreadyMoved] = c.recovered
			} else {
				want[redrive.AlreadyKept] = c.recovered
			}
			if got[redrive.AlreadyMoved] != want[redrive.AlreadyMoved] || got[redrive.AlreadyKept] != want[redrive.AlreadyKept] ||
				res.Recovered != want[redrive.AlreadyMoved] {
				t.Errorf("recovered outcomes %v, want %v", got, want)
			}

			target := rdRead(t, ctx, b, work, nil)
			live := rdLive(t, ctx, b, dlq)
			count := map[string]int{}
			for _, r := range target {
				count["target "+rdID(r)]++
			}
			for _, r := range live {
				count["dlq "+rdID(r)]++
			}
			for i, v := range vals {
				env, err := babelqueue.Decode(v)
				if err != nil {
					t.Fatal(err)
				}
				where := "target "
				if seeds[i].urn == "urn:b" {
					where = "dlq "
				}
				if count[where+env.Meta.ID] != 1 {
					t.Errorf("dead letter %d (%s): %d in %s", i, seeds[i].urn, count[where+env.Meta.ID], where)
				}
			}
			if len(target) != len(seeds)-stays || len(live) != stays {
				t.Errorf("after: target %d (was %d after the crash), live region %d; want %d and %d", len(target), afterCrashTarget, len(live), len(seeds)-stays, stays)
			}
			// Nothing is left to do.
			if res := runRedrive(t, ctx, tr, dlq, sel); res.Moved != 0 || res.Examined != stays {
				t.Errorf("third run %+v", res)
			}
		})
	}
}

// scenarioStopWhilePassingRecovered: a run that finds a batch written by
// an interrupted run and is itself stopped while passing that batch's
// records leaves the cursor within them, still knowing they were written:
// the next run passes the rest without writing them again.
func scenarioStopWhilePassingRecovered(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work, dlq := e.topics(t, ctx, 1)
	var seeds []rdSeed
	for i := range 5 {
		seeds = append(seeds, rdSeed{key: []byte("k" + strconv.Itoa(i)), urn: "urn:a"})
	}
	e.seed(t, ctx, b, dlq, work, seeds...)
	redriveFault = func(point, kind string, partition int, offset int64) error {
		if point == redriveAfterWrite {
			return errCrash
		}
		return nil
	}
	_, err := redrive.Run(ctx, tr, dlq)
	redriveFault = nil
	if !errors.Is(err, errCrash) {
		t.Fatalf("interrupted run: %v", err)
	}
	if n := len(rdRead(t, ctx, b, work, nil)); n != 5 {
		t.Fatalf("the interrupted run wrote %d copies, want its batch of 5", n)
	}
	// Stopped after passing two of the five.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	seen := 0
	res, err := redrive.Run(sctx, tr, dlq, redrive.WithProgress(nil, func(redrive.Item) {
		if seen++; seen == 2 {
			stop()
		}
	}))
	if !errors.Is(err, context.Canceled) || res.Recovered != 2 {
		t.Fatalf("stopped run: %v, %+v", err, res)
	}
	if c := rdCursor(t, ctx, b, RedriveCursor(dlq), dlq); c[0] != 2 {
		t.Fatalf("cursor at %d, want 2", c[0])
	}
	res = runRedrive(t, ctx, tr, dlq)
	if res.Recovered != 3 || res.Moved != 0 {
		t.Errorf("last run %+v; want the 3 others recovered", res)
	}
	ids := map[string]int{}
	for _, r := range rdRead(t, ctx, b, work, nil) {
		ids[rdID(r)]++
	}
	if len(ids) != 5 {
		t.Errorf("target holds %d messages, want 5", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("message %s in the target %d times", id, n)
		}
	}
}

func TestRedriveStopWhilePassingRecovered(t *testing.T) {
	scenarioStopWhilePassingRecovered(t, embEnv(t))
}

func TestRedriveDecisions(t *testing.T) {
	scenarioMovesKeepsAndSelections(t, embEnv(t))
}

func TestRedriveDryRun(t *testing.T) { scenarioDryRun(t, embEnv(t)) }

func TestRedriveMax(t *testing.T) { scenarioMax(t, embEnv(t)) }

func TestRedriveCrashPoints(t *testing.T) { scenarioCrashPoints(t, embEnv(t)) }

func embEnv(t *testing.T) rdEnv {
	t.Helper()
	b, err := devkafka.Start()
	if err != nil {
		t.Fatalf("devkafka.Start: %v", err)
	}
	t.Cleanup(b.Close)
	return rdEnv{brokers: b.Addrs()}
}

func TestRedriveBadInput(t *testing.T) {
	ctx := context.Background()
	tr, err := New(WithWriter(&fakeWriterNop{}), WithReaderFactory(func(string) Reader { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redrive.Run(ctx, tr, "q.dlq"); !errors.Is(err, ErrNoBrokers) {
		t.Errorf("no brokers: %v", err)
	}
	tr2, err := New(WithBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr2.Redrive(ctx, " ", redrive.NewPlan()); !errors.Is(err, ErrEmptyTopic) {
		t.Errorf("blank dlq: %v", err)
	}
	_ = tr2.Close()
	if _, err := tr2.Redrive(ctx, "q.dlq", redrive.NewPlan()); !errors.Is(err, ErrClosed) {
		t.Errorf("closed: %v", err)
	}
}

type fakeWriterNop struct{}

func (fakeWriterNop) WriteMessages(context.Context, ...kafkago.Message) error { return nil }

func TestRedrivePendingMetadata(t *testing.T) {
	p := redrivePending{V: redrivePendingVersion, Offset: 9, Last: 12, Topic: "orders", Partition: 2, From: 40}
	back, ok := decodeRedrivePending(p.encode())
	if !ok || back != p {
		t.Errorf("round trip %+v %t", back, ok)
	}
	for _, s := range []string{"", "x", `{"bq_redrive":2,"offset":1,"topic":"t"}`, `{"bq_redrive":1,"offset":1}`, `{"bq_redrive":1,"offset":-1,"topic":"t"}`} {
		if _, ok := decodeRedrivePending(s); ok {
			t.Errorf("%q decoded as a pending write", s)
		}
	}
	if back, ok := decodeRedrivePending(`{"bq_redrive":1,"offset":5,"topic":"t","partition":0,"from":0}`); !ok || back.Last != 5 {
		t.Errorf("a pending write without last covers its first record only: %+v %t", back, ok)
	}
	if got := len(p.encode()); got > 4096 {
		t.Errorf("metadata of %d bytes exceeds offset.metadata.max.bytes", got)
	}
}

func TestRedriveKeptCopyHeadersNeverGrow(t *testing.T) {
	r := &redriveRun{t: &Transport{cfg: defaultConfig()}, dlq: "q.dlq"}
	rec := redriveRecord{Partition: 1, Offset: 7, Key: []byte("k"), Value: []byte("v"), Headers: []kafkago.Header{
		{Key: "a", Value: []byte("1")}, {Key: wire.HeaderRedriveSource, Value: []byte("q.dlq/0/3")}, {Key: "b", Value: []byte("2")},
	}}
	got := r.keptCopy(rec)
	want := []kafkago.Header{{Key: "a", Value: []byte("1")}, {Key: wire.HeaderRedriveSource, Value: []byte("q.dlq/1/7")}, {Key: "b", Value: []byte("2")}}
	if diff := cmp.Diff(want, got.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if !bytes.Equal(got.Key, rec.Key) || !bytes.Equal(got.Value, rec.Value) {
		t.Errorf("kept copy %q/%q", got.Key, got.Value)
	}
	again := r.keptCopy(redriveRecord{Partition: 1, Offset: 9, Headers: got.Headers})
	if len(again.Headers) != 3 || fmt.Sprint(hdr(again, wire.HeaderRedriveSource)) != "q.dlq/1/9" {
		t.Errorf("second write-back headers %v", again.Headers)
	}
}

func TestRedriveRetriesOnlySafeErrors(t *testing.T) {
	wrapped := writeError("t/0", kafkago.NotLeaderForPartition)
	if !rejectedBeforeAppend(wrapped) || rejectedBeforeAppend(writeError("t/0", kafkago.RequestTimedOut)) || rejectedBeforeAppend(io.ErrUnexpectedEOF) {
		t.Error("a produce is retried only when the broker rejected it before the append")
	}
	if !transient(wrapf(kafkago.NotCoordinatorForGroup, "commit")) || transient(wrapf(kafkago.GroupAuthorizationFailed, "commit")) {
		t.Error("transient classification")
	}
	calls := 0
	err := retrying(context.Background(), transient, func() error { calls++; return kafkago.LeaderNotAvailable })
	if !errors.Is(err, kafkago.LeaderNotAvailable) || calls != brokerCallAttempts {
		t.Errorf("retrying a transient error: %d calls, %v", calls, err)
	}
	calls = 0
	err = retrying(context.Background(), transient, func() error {
		if calls++; calls < 3 {
			return kafkago.NotCoordinatorForGroup
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("retry until success: %d calls, %v", calls, err)
	}
	calls = 0
	if err := retrying(context.Background(), transient, func() error { calls++; return errCrash }); !errors.Is(err, errCrash) || calls != 1 {
		t.Errorf("a permanent error was retried: %d calls", calls)
	}
}

// TestRetryCopyKeepsRedriveCount: a tiered retry carries the delivery's
// bq-redrive-count, once, hop after hop, so a later redrive's guard sees it.
func TestRetryCopyKeepsRedriveCount(t *testing.T) {
	rg := newRig(t, WithRetryTiers(time.Second))
	ctx := context.Background()
	reinject := &Reinjector{clock: rg.clock, workOf: map[string]string{"orders.retry.1": "orders"}}
	first := append(contractHeaders("0"), h(wire.HeaderRedriveCount, "2"), h("traceparent", "00-a-b-01"))
	rg.log.append("orders", 0, kafkago.Message{Key: []byte("k"), Value: []byte(envelope(t, 0)), Headers: first})
	var afterOne []string
	for hop := 0; hop < 4; hop++ {
		m := rg.pop("orders")
		if got := m.Headers[wire.HeaderRedriveCount]; got != "2" {
			t.Fatalf("hop %d: bq-redrive-count %q", hop, got)
		}
		if err := rg.tr.PublishRetryForAttempt(ctx, m, hop); err != nil {
			t.Fatal(err)
		}
		if err := rg.tr.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
		tier := rg.log.records("orders.retry.1")
		copied := tier[len(tier)-1]
		n := 0
		for _, hd := range copied.Headers {
			if hd.Key == wire.HeaderRedriveCount {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("hop %d: the retry copy has %d bq-redrive-count headers: %v", hop, n, copied.Headers)
		}
		back := reinject.reinjected(copied)
		keys := headerKeys(back.Headers)
		if hop == 0 {
			afterOne = keys
		} else if diff := cmp.Diff(afterOne, keys); diff != "" {
			t.Fatalf("hop %d: headers grew (-hop 0 +now):\n%s", hop, diff)
		}
		rg.log.append("orders", 0, back)
	}
}
