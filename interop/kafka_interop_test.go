//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
)

const urnCreated = "urn:babel:interop:created"

// interopData is a payload with what a re-encode could change: a 64-bit
// integer beyond float64, non-ASCII text and HTML-sensitive characters.
var interopData = map[string]any{"order_id": 1042, "big": json.Number("12345678901234567890"), "text": "é <b>&'"}

func bg(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type pyPublished struct {
	Body b64    `json:"body"`
	ID   string `json:"id"`
	At   int64  `json:"at"`
}

// Python publishes through KafkaTransport; the record carries the body
// byte for byte, the six contract headers, no key and created_at as its
// timestamp, and our App hands the handler that envelope and those headers.
func TestKafkaPythonToGo(t *testing.T) {
	scenario(t, "kafka-python-to-go", "")
	topic := brokertest.Topic(t, "py2go")
	tr := newKafka(t, kafka.WithGroupID(topic+"-g"))
	ensureTopics(t, tr, topic, 1)

	pub := runPeer[pyPublished](t, "kafka-publish", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic,
		"messages": []any{map[string]any{"urn": urnCreated, "data": interopData}, map[string]any{"urn": urnCreated, "data": map[string]any{"n": 2}}}}, 60*time.Second)
	if len(pub) != 2 {
		t.Fatalf("peer published %d", len(pub))
	}
	recs := readKafka(t, topic, 2, 30*time.Second, 0)
	for i, r := range recs {
		if !bytes.Equal(r.Value, pub[i].Body) {
			t.Errorf("record %d value\n%s\nwant the body Python wrote\n%s", i, r.Value, pub[i].Body)
		}
		if r.Key != nil {
			t.Errorf("record %d key %q, want null", i, r.Key)
		}
		if got, want := kafkaHeaderList(r.Headers), contractHeaders(t, pub[i].Body); !cmp.Equal(got, want) {
			t.Errorf("record %d headers %v, want %v", i, got, want)
		}
		env, err := babelqueue.Decode(pub[i].Body)
		if err != nil {
			t.Fatal(err)
		}
		if r.Time.UnixMilli() != env.Meta.CreatedAt {
			t.Errorf("record %d timestamp %d, want created_at %d", i, r.Time.UnixMilli(), env.Meta.CreatedAt)
		}
	}

	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic))
	app.Handle(urnCreated, rec.handler(nil))
	runApp(t, app, topic)
	for i := range pub {
		d := rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == pub[i].ID })
		if !bytes.Equal(d.env.Raw(), pub[i].Body) || d.env.Meta.Lang != "python" || d.env.Attempts != 0 || d.env.Job != urnCreated {
			t.Errorf("handler got %s (lang %q attempts %d)", d.env.Raw(), d.env.Meta.Lang, d.env.Attempts)
		}
		want := map[string]string{}
		for _, h := range recs[i].Headers {
			want[h.Key] = string(h.Value)
		}
		if diff := cmp.Diff(want, d.headers); diff != "" {
			t.Errorf("handler headers (-record +handler):\n%s", diff)
		}
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(rec.all()[0].env.Data(), &data); err != nil || string(data["big"]) != "12345678901234567890" {
		t.Errorf("data %s lost the 64-bit integer (%v)", rec.all()[0].env.Data(), err)
	}
}

// Our App publishes (a binary key, out-of-band headers; and one without a
// key); the Python consumer reads the same bytes, key, headers and
// timestamp, its handler gets the envelope, and the Python codec encodes
// that envelope to exactly the bytes we wrote.
func TestKafkaGoToPython(t *testing.T) {
	scenario(t, "kafka-go-to-python", "")
	topic := brokertest.Topic(t, "go2py")
	tr := newKafka(t)
	ensureTopics(t, tr, topic, 1)
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic))
	ctx := bg(t, 30*time.Second)
	key := []byte{0xde, 0xad, 0x00, 0xbe, 0xef}
	id1, err := app.PublishWithHeaders(ctx, urnCreated, interopData,
		map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x-tenant": "acme"}, babelqueue.WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	id2, err := app.Publish(ctx, urnCreated, map[string]any{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	recs := readKafka(t, topic, 2, 30*time.Second, 0)

	lines := runPeer[pyDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic,
		"group": topic + "-py", "urns": []string{urnCreated}, "count": 2, "timeout": 60}, 90*time.Second)
	if len(lines) != 2 {
		t.Fatalf("python consumed %d records", len(lines))
	}
	var bodies []b64
	for i, d := range lines {
		var r pyKafkaRecord
		if err := json.Unmarshal(d.Record, &r); err != nil {
			t.Fatal(err)
		}
		want := recs[i]
		if !bytes.Equal(r.Value, want.Value) {
			t.Errorf("python read value %s, want %s", r.Value, want.Value)
		}
		if !bytes.Equal(r.Key, want.Key) || (r.Key == nil) != (want.Key == nil) {
			t.Errorf("python read key %x (null %v), want %x (null %v)", r.Key, r.Key == nil, want.Key, want.Key == nil)
		}
		if got := r.headerList(t); !cmp.Equal(got, kafkaHeaderList(want.Headers)) {
			t.Errorf("python read headers %v, want %v", got, kafkaHeaderList(want.Headers))
		}
		env, err := babelqueue.Decode(want.Value)
		if err != nil {
			t.Fatal(err)
		}
		if r.TimestampType != 1 || r.Timestamp != env.Meta.CreatedAt {
			t.Errorf("python read timestamp type %d value %d, want CreateTime (1) %d", r.TimestampType, r.Timestamp, env.Meta.CreatedAt)
		}
		e := d.Envelope
		meta, _ := e["meta"].(map[string]any)
		if e == nil || e["job"] != urnCreated || e["trace_id"] != env.TraceID || meta["id"] != []string{id1, id2}[i] || meta["lang"] != "go" ||
			e["attempts"] != float64(0) || meta["created_at"] != float64(env.Meta.CreatedAt) {
			t.Errorf("python handler got %v", e)
		}
		bodies = append(bodies, want.Value)
	}
	re := runPeer[struct {
		Bodies []b64 `json:"bodies"`
	}](t, "reencode", map[string]any{"bodies": bodies}, 30*time.Second)
	for i := range bodies {
		if !bytes.Equal(re[0].Bodies[i], bodies[i]) {
			t.Errorf("the Python codec encodes our envelope as\n%s\nwe wrote\n%s", re[0].Bodies[i], bodies[i])
		}
	}
}

// A retry our App parks on a tier is carried back by the Python SDK's
// RetryReinjector after the tier's delay: value and key byte for byte,
// every header but bq-delay and bq-original-topic kept, traceparent too.
func TestKafkaGoRetryPythonReinjector(t *testing.T) {
	scenario(t, "kafka-go-retry-python-reinjector", "")
	topic := brokertest.Topic(t, "goretry")
	const tier = 2 * time.Second
	tr := newKafka(t, kafka.WithGroupID(topic+"-g"), kafka.WithRetryTiers(tier))
	ensureTopics(t, tr, topic, 1)
	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(3))
	app.Handle(urnCreated, rec.handler(func(env *babelqueue.Envelope) bool { return env.Attempts == 0 }))
	key := []byte("order-1042")
	ctx := bg(t, 60*time.Second)
	id, err := app.PublishWithHeaders(ctx, urnCreated, interopData, map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, babelqueue.WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	reinjector := startPeer(t, "kafka-reinject", map[string]any{"brokers": kafkaBrokers(t)[0], "topics": []string{topic},
		"tiers_ms": []int{int(tier / time.Millisecond)}, "group": topic + "-reinject", "count": 1, "timeout": 60})
	runApp(t, app, topic)

	d0 := rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == id && d.env.Attempts == 0 })
	d1 := rec.await(t, 40*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == id && d.env.Attempts == 1 })
	reinjector.finish(t, 30*time.Second)
	if gap := d1.at.Sub(d0.at); gap < tier-100*time.Millisecond {
		t.Errorf("python re-injected after %v, before the %v tier", gap, tier)
	}
	if d1.headers["traceparent"] == "" || d1.headers["bq-attempts"] != "1" {
		t.Errorf("re-injected delivery headers %v", d1.headers)
	}
	parked := readKafka(t, kafka.RetryTopic(topic, 1), 1, 20*time.Second, 0)[0]
	back := readKafka(t, topic, 2, 20*time.Second, 0)[1]
	if !bytes.Equal(back.Value, parked.Value) || !bytes.Equal(back.Key, key) {
		t.Errorf("re-injected value %s key %q, tier record %s", back.Value, back.Key, parked.Value)
	}
	var want []string
	for _, h := range parked.Headers {
		if h.Key != "bq-delay" && h.Key != "bq-original-topic" {
			want = append(want, h.Key+"="+string(h.Value))
		}
	}
	if got := kafkaHeaderList(back.Headers); !cmp.Equal(got, want) {
		t.Errorf("re-injected headers %v, want %v", got, want)
	}
}

// A retry the Python SDK parks on a LogAppendTime tier is stamped with the
// message's created_at (an hour old here); the broker replaces it with the
// append time, and our re-injector must wait the whole tier from there.
func TestKafkaPythonRetryGoReinjectorLogAppendTime(t *testing.T) {
	scenario(t, "kafka-python-retry-go-reinjector-logappendtime", "issue 35 item 1: LogAppendTime in the re-injector")
	topic := brokertest.Topic(t, "pyretry")
	const tier = 3 * time.Second
	tr := newKafka(t, kafka.WithGroupID(topic+"-go"), kafka.WithRetryTiers(tier))
	ensureTopics(t, tr, topic, 1)
	runReinjector(t, newKafka(t, kafka.WithGroupID(topic+"-reinject"), kafka.WithRetryTiers(tier)), topic)
	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic))
	app.Handle(urnCreated, rec.handler(nil))
	runApp(t, app, topic)

	old := time.Now().Add(-time.Hour).UnixMilli()
	pub := runPeer[pyPublished](t, "kafka-publish", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic,
		"messages": []any{map[string]any{"urn": urnCreated, "data": map[string]any{"n": 1}, "created_at": old}}}, 60*time.Second)
	lines := runPeer[pyDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "group": topic + "-py",
		"urns": []string{urnCreated}, "tiers_ms": []int{int(tier / time.Millisecond)}, "fail": true, "count": 1, "timeout": 60}, 90*time.Second)
	parkedAt := time.UnixMilli(lines[0].Settled)

	tierRecs := runPeer[pyKafkaRecord](t, "kafka-read", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": kafka.RetryTopic(topic, 1), "count": 1, "timeout": 20}, 40*time.Second)
	if len(tierRecs) != 1 || tierRecs[0].TimestampType != 2 || tierRecs[0].Timestamp < parkedAt.Add(-10*time.Second).UnixMilli() {
		t.Fatalf("tier record %+v: want a LogAppendTime (2) timestamp near %v", tierRecs, parkedAt)
	}
	d1 := rec.await(t, 40*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == pub[0].ID && d.env.Attempts == 1 })
	if gap := d1.at.Sub(parkedAt); gap < tier-150*time.Millisecond {
		t.Errorf("our re-injector carried the Python retry back %v after it was parked, before its %v tier (created_at is an hour old)", gap, tier)
	}
}

// Our App dead-letters a message; the Python SDK's redrive moves it back;
// the redriven record is the original byte for byte with its key, and our
// App handles it again.
func TestKafkaGoDeadLetterPythonRedrive(t *testing.T) {
	scenario(t, "kafka-go-dlq-python-redrive", "")
	topic := brokertest.Topic(t, "godlq")
	tr := newKafka(t, kafka.WithGroupID(topic+"-g"))
	ensureTopics(t, tr, topic, 1)
	var mu sync.Mutex
	seen := map[string]int{}
	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(1))
	app.Handle(urnCreated, rec.handler(func(env *babelqueue.Envelope) bool {
		mu.Lock()
		defer mu.Unlock()
		seen[env.Meta.ID]++
		return seen[env.Meta.ID] == 1
	}))
	key := []byte{0x00, 0x01, 'k'}
	id, err := app.Publish(bg(t, 30*time.Second), urnCreated, interopData, babelqueue.WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	runApp(t, app, topic)
	dl := readKafka(t, topic+".dlq", 1, 40*time.Second, 0)[0]
	if env, err := babelqueue.Decode(dl.Value); err != nil || env.DeadLetter == nil || env.DeadLetter.Reason != "failed" {
		t.Fatalf("dead letter %s (%v)", dl.Value, err)
	}
	res := runPeer[struct {
		Redriven int `json:"redriven"`
	}](t, "kafka-redrive", map[string]any{"brokers": kafkaBrokers(t)[0], "dlq": topic + ".dlq", "group": topic + "-redrive", "timeout": 40}, 60*time.Second)
	if len(res) == 0 || res[len(res)-1].Redriven != 1 {
		t.Fatalf("python redrive: %+v", res)
	}
	rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == id })
	d := rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == id })
	if d.env.Attempts != 0 || d.env.DeadLetter != nil {
		t.Errorf("redriven delivery %s", d.env.Raw())
	}
	recs := readKafka(t, topic, 2, 20*time.Second, 0)
	if !bytes.Equal(recs[1].Value, recs[0].Value) || !bytes.Equal(recs[1].Key, key) {
		t.Errorf("python redrove\n%s key %x\nthe original was\n%s key %x", recs[1].Value, recs[1].Key, recs[0].Value, key)
	}
}

// The Python SDK dead-letters a message; bq dlq stats and bq dlq peek see
// it, bq redrive moves it back, and our App handles it: the redriven body is
// the one Python first published.
func TestKafkaPythonDeadLetterBq(t *testing.T) {
	scenario(t, "kafka-python-dlq-bq-redrive", "")
	topic := brokertest.Topic(t, "pydlq")
	dlq := topic + ".dlq"
	tr := newKafka(t, kafka.WithGroupID(topic+"-go"))
	ensureTopics(t, tr, topic, 1)
	pub := runPeer[pyPublished](t, "kafka-publish", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic,
		"messages": []any{map[string]any{"urn": urnCreated, "data": interopData}}}, 60*time.Second)
	runPeer[pyDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "group": topic + "-py",
		"urns": []string{urnCreated}, "fail": true, "max_attempts": 1, "dead_letter": true, "count": 1, "timeout": 60}, 90*time.Second)
	dl := readKafka(t, dlq, 1, 30*time.Second, 0)[0]
	env, err := babelqueue.Decode(dl.Value)
	if err != nil || env.DeadLetter == nil || env.DeadLetter.Reason != "failed" || env.DeadLetter.Lang != "python" {
		t.Fatalf("python dead letter %s (%v)", dl.Value, err)
	}

	broker := "kafka://" + kafkaBrokers(t)[0]
	stats := bq(t, "dlq", "stats", "-q", topic, "-b", broker, "--json")
	var st struct {
		Total    int            `json:"total"`
		ByReason map[string]int `json:"by_reason"`
		ByURN    map[string]int `json:"by_urn"`
	}
	if err := json.Unmarshal([]byte(stats), &st); err != nil || st.Total != 1 || st.ByReason["failed"] != 1 || st.ByURN[urnCreated] != 1 {
		t.Errorf("bq dlq stats does not count the python dead letter (%v):\n%s", err, stats)
	}
	peek := bq(t, "dlq", "peek", "-q", topic, "-b", broker, "--json")
	var pk struct {
		ID         string `json:"id"`
		DeadLetter struct {
			Reason, Lang string
			Attempts     int
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(peek)), &pk); err != nil || pk.ID != pub[0].ID || pk.DeadLetter.Lang != "python" || pk.DeadLetter.Reason != "failed" {
		t.Errorf("bq dlq peek does not show the python dead letter %s (%v):\n%s", pub[0].ID, err, peek)
	}
	out := bq(t, "redrive", "-q", topic, "-b", broker, "--json")
	var summary struct {
		Moved int `json:"moved"`
	}
	if err := json.Unmarshal([]byte(out), &summary); err != nil || summary.Moved != 1 {
		t.Errorf("bq redrive moved %d (%v):\n%s", summary.Moved, err, out)
	}

	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic))
	app.Handle(urnCreated, rec.handler(nil))
	runApp(t, app, topic)
	d := rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == pub[0].ID && d.headers["bq-redrive-count"] != "" })
	if !bytes.Equal(d.env.Raw(), pub[0].Body) || d.env.Attempts != 0 || d.env.DeadLetter != nil {
		t.Errorf("redriven body\n%s\nwant the body python published\n%s", d.env.Raw(), pub[0].Body)
	}
}

// Our producer writes U+2028 and U+2029 raw, as the Python SDK (and
// JSON.stringify) does, so both encode the same envelope to the same bytes.
func TestKafkaLineSeparatorsRaw(t *testing.T) {
	scenario(t, "kafka-u2028-u2029-raw", "issue 35 item 5: U+2028/U+2029 written raw")
	topic := brokertest.Topic(t, "u2028")
	tr := newKafka(t)
	ensureTopics(t, tr, topic, 1)
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic))
	if _, err := app.Publish(bg(t, 30*time.Second), urnCreated, map[string]any{"s": "a\u2028b\u2029c"}); err != nil {
		t.Fatal(err)
	}
	body := readKafka(t, topic, 1, 30*time.Second, 0)[0].Value
	if !bytes.Contains(body, []byte("a\u2028b\u2029c")) {
		t.Errorf("our body escapes the separators: %s", body)
	}
	re := runPeer[struct {
		Bodies []b64 `json:"bodies"`
	}](t, "reencode", map[string]any{"bodies": []b64{body}}, 30*time.Second)
	if !bytes.Equal(re[0].Bodies[0], body) {
		t.Errorf("the Python codec writes\n%q\nwe wrote\n%q", re[0].Bodies[0], body)
	}
}
