package kafkashare

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestNewReportsEveryBadOption(t *testing.T) {
	_, err := New(WithBrokers("nohost"), WithLockDuration(time.Millisecond), WithMaxRecords(0), WithRetryDelay(-1), WithDeliveryCountLimit(1))
	if !errors.Is(err, driver.ErrInvalidOption) {
		t.Fatalf("err = %v, want ErrInvalidOption", err)
	}
	for _, want := range []string{"nohost", "lock duration", "max records", "retry delay", "delivery count limit"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := New(); !errors.Is(err, driver.ErrInvalidOption) {
		t.Errorf("New() without brokers: err = %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// The attempts rule: the Kafka rule (valid header over body), then at
// least deliveryCount-1; the body and the header carry the result.
func TestReconcile(t *testing.T) {
	body := `{"job":"u","trace_id":"t","data":{},"meta":{"id":"1","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":0}`
	cases := []struct {
		name     string
		header   string
		present  bool
		dc       int
		want     int
		wantHdr  string
		hdrWrote bool
	}{
		{"first delivery", "", false, 1, 0, "", false},
		{"redelivered twice", "", false, 3, 2, "2", true},
		{"header above count", "4", true, 2, 4, "4", true},
		{"count above header", "1", true, 3, 2, "2", true},
		{"invalid header", "x", true, 2, 1, "1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rm := driver.ReceivedMessage{Body: body}
			if c.present {
				rm.Headers = map[string]string{wire.HeaderAttempts: c.header}
			}
			reconcile(&rm, c.dc)
			if n, _ := wire.BodyAttempts(rm.Body); n != c.want {
				t.Errorf("body attempts = %d, want %d", n, c.want)
			}
			h, ok := rm.Headers[wire.HeaderAttempts]
			if ok != c.hdrWrote || h != c.wantHdr {
				t.Errorf("header = %q, %v; want %q, %v", h, ok, c.wantHdr, c.hdrWrote)
			}
		})
	}
	// A poison body keeps its bytes; the header carries the count.
	rm := driver.ReceivedMessage{Body: "not json"}
	reconcile(&rm, 3)
	if rm.Body != "not json" || rm.Headers[wire.HeaderAttempts] != "2" {
		t.Errorf("poison: body %q, header %q", rm.Body, rm.Headers[wire.HeaderAttempts])
	}
}

// A held record whose lock passed unrenewed is reported once; one within
// its lock gets a renewal instead; a due delayed retry is released.
func TestSweepReportsLostLockOnce(t *testing.T) {
	var got []LockLost
	tr := &Transport{cfg: defaults(), stop: make(chan struct{})}
	tr.cfg.lock = 3 * time.Second
	tr.cfg.onLockLost = func(l LockLost) { got = append(got, l) }
	now := time.Unix(1000, 0)
	q := &queue{t: tr, name: "q", held: map[*held]struct{}{}, okAt: map[int32]time.Time{}}
	expired := &held{q: q, rec: &kgo.Record{Topic: "q", Partition: 2, Offset: 7}, since: now.Add(-5 * time.Second), lockEnd: now.Add(-time.Second)}
	renew := &held{q: q, rec: &kgo.Record{Topic: "q", Offset: 8}, since: now.Add(-2 * time.Second), lockEnd: now.Add(time.Second)}
	due := &held{q: q, rec: &kgo.Record{Topic: "q", Offset: 9}, since: now, lockEnd: now.Add(3 * time.Second), releaseAt: now}
	for _, h := range []*held{expired, renew, due} {
		q.held[h] = struct{}{}
	}
	q.cl, _ = kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	defer q.cl.Close()
	q.sweep(now)
	q.sweep(now.Add(tick))
	if len(got) != 1 || got[0].Partition != 2 || got[0].Offset != 7 || got[0].Held != 5*time.Second {
		t.Errorf("lock losses = %+v, want one for partition 2 offset 7 held 5s", got)
	}
	if renew.renewAt.IsZero() {
		t.Error("the record within its lock was not renewed")
	}
	if !due.settled || len(q.held) != 2 {
		t.Errorf("due retry settled=%v, held=%d", due.settled, len(q.held))
	}
	// The renewal confirmed: its lock end moves.
	q.acked(nil, kgo.ShareAckResults{{Topic: "q", Partition: 0}})
	if !renew.renewAt.IsZero() || !renew.lockEnd.After(now.Add(2*time.Second)) {
		t.Errorf("after the confirmation: renewAt %v lockEnd %v", renew.renewAt, renew.lockEnd)
	}
}

// Receive hands out the records of the oldest poll first, so that the
// member that polled first is freed first for its next poll; it reports
// ErrClosed once a member closed.
func TestPopTakesTheOldestPollFirst(t *testing.T) {
	set := &queueSet{name: "q", ready: make(chan struct{}, 1)}
	newer := &queue{set: set, held: map[*held]struct{}{}, polled: 2}
	older := &queue{set: set, held: map[*held]struct{}{}, polled: 1}
	set.members = []*queue{newer, older}
	put := func(q *queue, off int64) {
		h := &held{q: q, rec: &kgo.Record{Offset: off}}
		h.rm = driver.ReceivedMessage{Offset: off, Handle: h}
		q.buf = append(q.buf, h)
		q.held[h] = struct{}{}
	}
	put(newer, 20)
	put(older, 10)
	put(older, 11)
	var got []int64
	for {
		rm, err := set.pop()
		if err != nil {
			t.Fatal(err)
		}
		if rm == nil {
			break
		}
		got = append(got, rm.Offset)
	}
	if want := []int64{10, 11, 20}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
	older.closed = true
	if _, err := set.pop(); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("pop after close: err = %v, want ErrClosed", err)
	}
}

// A member polls only while a Receive asks: before its deadline and with
// its context live; asking wakes every member's poller when no Receive
// was asking.
func TestMembersPollOnlyWhileAsked(t *testing.T) {
	set := &queueSet{name: "q"}
	m := &queue{set: set, kick: make(chan struct{}, 1)}
	set.members = []*queue{m}
	if _, _, ok := set.asked(); ok {
		t.Error("asked before any Receive")
	}
	ctx, cancel := context.WithCancel(context.Background())
	until := time.Now().Add(time.Hour)
	set.ask(ctx, time.Now(), until)
	select {
	case <-m.kick:
	default:
		t.Error("ask did not wake the member")
	}
	if c, u, ok := set.asked(); !ok || c != ctx || !u.Equal(until) {
		t.Errorf("asked = %v, %v, %v; want the Receive's context and deadline", c, u, ok)
	}
	// An earlier deadline does not shorten a later one, and a Receive
	// asking already wakes nobody.
	set.ask(ctx, time.Now(), time.Now().Add(time.Minute))
	if _, u, _ := set.asked(); !u.Equal(until) {
		t.Errorf("deadline %v, want %v", u, until)
	}
	select {
	case <-m.kick:
		t.Error("a Receive asking already woke the member")
	default:
	}
	cancel()
	if _, _, ok := set.asked(); ok {
		t.Error("asked after the Receive's context ended")
	}
	set.ask(context.Background(), time.Now(), time.Now().Add(-time.Second))
	if _, _, ok := set.asked(); !ok {
		t.Error("a live context with the earlier deadline still pending: not asked")
	}
	select {
	case <-m.kick:
	default:
		t.Error("asking again after the context ended did not wake the member")
	}
	set.askTil = time.Now().Add(-time.Millisecond)
	if _, _, ok := set.asked(); ok {
		t.Error("asked after the deadline passed")
	}
}

// BenchmarkReceiveAck is the transport's work per record of a no-op
// consume: a poll of 500 records held (add), then each received and
// accepted. The records carry the six contract headers of an envelope.
func BenchmarkReceiveAck(b *testing.B) {
	const n = 500
	_, body := orderEnvelope(b)
	var hs []kgo.RecordHeader
	for _, h := range wire.ProjectBody(body).Headers() {
		hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	tr := &Transport{cfg: defaults(), queues: map[string]*queueSet{}}
	tr.cfg.group = "g"
	set := &queueSet{name: "q", ready: make(chan struct{}, 1)}
	q := &queue{t: tr, set: set, name: "q", held: map[*held]struct{}{}}
	set.members = []*queue{q}
	tr.queues["q"] = set
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: "q", Value: body, Headers: hs, Offset: int64(i)}
		}
		q.add(kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "q", Partitions: []kgo.FetchPartition{{Records: recs}}}}}})
		for range n {
			rm, err := tr.Receive(ctx, "q", time.Second)
			if err != nil || rm == nil {
				b.Fatal(rm, err)
			}
			if err := tr.Ack(ctx, rm); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// A delivery defers its headers: none is copied until asked for, a key
// carried twice reads as its last value, and an attempts change fills the
// map first, keeping the other headers.
func TestDeliveryDefersHeaders(t *testing.T) {
	body := `{"job":"u","trace_id":"t","data":{},"meta":{"id":"1","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":0}`
	tr := &Transport{cfg: defaults()}
	rec := &kgo.Record{Topic: "q", Value: []byte(body), Headers: []kgo.RecordHeader{
		{Key: wire.HeaderJob, Value: []byte("u")}, {Key: "x", Value: []byte("1")}, {Key: "x", Value: []byte("2")},
	}}
	rm := delivery(tr, &held{rec: rec})
	if rm.Headers != nil {
		t.Fatalf("headers built at delivery: %v", rm.Headers)
	}
	if v, ok := rm.Header("x"); !ok || v != "2" {
		t.Errorf("Header(x) = %q, %v; want the last value 2", v, ok)
	}
	rm.FillHeaders()
	if want := map[string]string{wire.HeaderJob: "u", "x": "2"}; !maps.Equal(rm.Headers, want) {
		t.Errorf("filled headers %v, want %v", rm.Headers, want)
	}
	// The third delivery: attempts 2 in the body and the header, the
	// deferred headers kept.
	again := delivery(tr, &held{rec: rec})
	reconcile(&again, 3)
	if n, _ := wire.BodyAttempts(again.Body); n != 2 {
		t.Errorf("body attempts %d, want 2", n)
	}
	if want := map[string]string{wire.HeaderJob: "u", "x": "2", wire.HeaderAttempts: "2"}; !maps.Equal(again.Headers, want) {
		t.Errorf("headers after reconcile %v, want %v", again.Headers, want)
	}
	if string(rec.Value) != body {
		t.Error("reconcile changed the record's bytes")
	}
}

// poolStub is a kgo pool that pools nothing.
type poolStub struct{}

func (poolStub) GetDecompressBytes([]byte, kgo.CompressionCodecType) []byte { return nil }
func (poolStub) PutDecompressBytes([]byte)                                  {}

func TestNewRefusesClientOptionsThatOverrideTheTransport(t *testing.T) {
	for name, opt := range map[string]kgo.Opt{
		"ConsumerGroup":          kgo.ConsumerGroup("g"),
		"ShareGroup":             kgo.ShareGroup("g"),
		"ConsumeTopics":          kgo.ConsumeTopics("orders"),
		"ConsumePartitions":      kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset()}}),
		"RequiredAcks":           kgo.RequiredAcks(kgo.LeaderAck()),
		"DisableIdempotentWrite": kgo.DisableIdempotentWrite(),
		"WithPools":              kgo.WithPools(poolStub{}),
	} {
		_, err := New(WithBrokers("127.0.0.1:9092"), WithShareGroup("g"), WithClientOptions(opt))
		if !errors.Is(err, driver.ErrInvalidOption) || !strings.Contains(err.Error(), name) && !(name == "RequiredAcks" && strings.Contains(err.Error(), "acks=all")) {
			t.Errorf("%s: err = %v, want ErrInvalidOption naming it", name, err)
		}
	}
	tr, err := New(WithBrokers("127.0.0.1:9092"), WithShareGroup("g"), WithClientOptions(kgo.ClientID("ok")))
	if err != nil {
		t.Fatalf("a harmless client option: %v", err)
	}
	tr.Close()
}

// TestRecordCarriesTheEnvelopeAndItsHeaders: a publish's record holds the
// body, the key, the contract headers, then the extra headers in key
// order (past the room kept for six), and meta.created_at as timestamp.
func TestRecordCarriesTheEnvelopeAndItsHeaders(t *testing.T) {
	env, body := orderEnvelope(t)
	out := &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: string(body), Key: []byte("k1"),
		Headers: map[string]string{"x-b": "2", "x-a": "1", "bq-job": "ignored"}}
	rec := record(out)
	if rec.Topic != "orders" || string(rec.Value) != string(body) || string(rec.Key) != "k1" {
		t.Fatalf("record = topic %q key %q value %q", rec.Topic, rec.Key, rec.Value)
	}
	var got []string
	for _, h := range rec.Headers {
		got = append(got, h.Key+"="+string(h.Value))
	}
	want := []string{}
	for _, h := range wire.ProjectBody(body).Headers() {
		want = append(want, h.Key+"="+h.Value)
	}
	want = append(want, "x-a=1", "x-b=2")
	if !slices.Equal(got, want) {
		t.Errorf("headers = %v, want %v", got, want)
	}
	if !slices.Contains(got, "bq-job=urn:babel:orders:created") {
		t.Errorf("headers = %v: the contract bq-job lost to an extra one", got)
	}
	if ms := rec.Timestamp.UnixMilli(); ms != env.Meta.CreatedAt {
		t.Errorf("timestamp = %d ms, want meta.created_at", ms)
	}
}

// TestRecordHeadersAreTheDriverHeaders: the record's headers, whether
// gathered on the stack (no extra headers) or through the driver, are
// those of driver.OutgoingHeaders, for every intent; a publish without
// extra headers costs one allocation.
func TestRecordHeadersAreTheDriverHeaders(t *testing.T) {
	_, body := orderEnvelope(t)
	for _, intent := range []driver.Intent{driver.IntentPublish, driver.IntentDeadLetter, driver.IntentRelease, driver.IntentForward, driver.IntentRestore} {
		for _, extra := range []map[string]string{nil, {"bq-job": "urn:babel:other:route", "x-a": "1"}} {
			out := &driver.Outgoing{Intent: intent, Queue: "orders", Body: string(body), Headers: extra}
			var got, want []string
			for _, h := range record(out).Headers {
				got = append(got, h.Key+"="+string(h.Value))
			}
			for _, h := range driver.OutgoingHeaders(out) {
				want = append(want, h.Key+"="+h.Value)
			}
			if !slices.Equal(got, want) {
				t.Errorf("intent %v, extra %v: headers %v, want %v", intent, extra, got, want)
			}
		}
	}
	out := &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: string(body)}
	if n := testing.AllocsPerRun(100, func() { _ = record(out) }); n != 1 {
		t.Errorf("record of a publish allocates %v times, want 1", n)
	}
}

// orderEnvelope returns a new envelope to the queue "orders" and its body.
func orderEnvelope(t testing.TB) (*wire.Envelope, []byte) {
	t.Helper()
	env, err := wire.Make("urn:babel:orders:created", map[string]any{"n": 1}, wire.WithQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return env, body
}
