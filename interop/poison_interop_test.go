//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
)

// poisonCase is one record a raw producer writes: a nil value or key is
// null, an empty one is empty.
type poisonCase struct {
	name       string
	key, value []byte
}

// rawRecord is the peer's kafka-produce-raw input.
type rawRecord struct {
	Key     b64         `json:"key"`
	Value   b64         `json:"value"`
	Headers [][2]string `json:"headers,omitempty"`
}

// poisonThroughApp writes cases and then a valid envelope to a new topic
// with a raw producer (confluent-kafka), runs our App (dead letters on) until
// the valid one is handled and returns the topic and its dead letters, read
// by the Python client (which tells a null key from an empty one), in order.
func poisonThroughApp(t *testing.T, prefix string, cases []poisonCase) (string, []pyKafkaRecord) {
	t.Helper()
	topic := brokertest.Topic(t, prefix)
	tr := newKafka(t, kafka.WithGroupID(topic+"-g"))
	ensureTopics(t, tr, topic, 1)
	valid, err := babelqueue.Make(urnCreated, map[string]any{"n": 1}, babelqueue.WithQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	validBody, err := valid.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var recs []rawRecord
	for _, c := range cases {
		recs = append(recs, rawRecord{Key: c.key, Value: c.value, Headers: [][2]string{{"x-case", c.name}}})
	}
	recs = append(recs, rawRecord{Key: []byte("valid"), Value: validBody})
	runPeer[map[string]any](t, "kafka-produce-raw", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "records": recs}, 60*time.Second)

	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic))
	app.Handle(urnCreated, rec.handler(nil))
	runApp(t, app, topic)
	rec.await(t, 45*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == valid.Meta.ID })
	dls := runPeer[pyKafkaRecord](t, "kafka-read", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic + ".dlq",
		"count": len(cases), "timeout": 30}, 60*time.Second)
	if len(dls) != len(cases) {
		t.Fatalf("%d dead letters, want %d", len(dls), len(cases))
	}
	return topic, dls
}

// comparePoisonWithPython asks the Python SDK for the poison dead-letter body
// of each case's value with the dead_letter block we wrote, and compares it
// with our record byte for byte.
func comparePoisonWithPython(t *testing.T, cases []poisonCase, dls []pyKafkaRecord) {
	t.Helper()
	var in []map[string]any
	for i, c := range cases {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(dls[i].Value, &fields); err != nil || fields["dead_letter"] == nil {
			t.Fatalf("%s: dead letter %s is not an object with a dead_letter block (%v)", c.name, dls[i].Value, err)
		}
		in = append(in, map[string]any{"input": b64(c.value), "block": string(fields["dead_letter"])})
	}
	py := runPeer[struct {
		Records []b64 `json:"records"`
	}](t, "poison-record", map[string]any{"cases": in}, 30*time.Second)
	for i, c := range cases {
		if !bytes.Equal(dls[i].Value, py[0].Records[i]) {
			t.Errorf("%s: our dead letter\n%q\nthe Python SDK's for the same input and block\n%q", c.name, dls[i].Value, py[0].Records[i])
		}
	}
}

// caseOf returns a dead letter's x-case header.
func caseOf(t testing.TB, r pyKafkaRecord) string {
	for _, h := range r.headerList(t) {
		if v, ok := strings.CutPrefix(h, "x-case="); ok {
			return v
		}
	}
	return ""
}

// Poison values from a raw producer are dead-lettered by our App in the
// shape the Python SDK builds (build_poison_record) for the same input.
func TestKafkaPoisonShapesMatchPython(t *testing.T) {
	scenario(t, "kafka-poison-shapes-match-python", "")
	cases := []poisonCase{
		{"null-value", []byte("k1"), nil},
		{"empty-value", []byte("k2"), []byte{}},
		{"invalid-utf8", []byte("k3"), []byte{'{', 0xff, 0xfe, '}', 0x80}},
		{"json-array", []byte("k4"), []byte(`[1,{"job":"urn:x"}]`)},
		{"not-json", []byte("k5"), []byte(`{not json`)},
		{"object-without-job", []byte("k6"), []byte(`{"x": 1, "big": 12345678901234567890}`)},
		{"control-characters", []byte("k7"), []byte("line\n\ttab\x01\x1f\x7f \"q\" \\ </script>")},
	}
	_, dls := poisonThroughApp(t, "poison", cases)
	for i, c := range cases {
		if got := caseOf(t, dls[i]); got != c.name {
			t.Fatalf("dead letter %d is %q, want %q (order)", i, got, c.name)
		}
		if !bytes.Equal(dls[i].Key, c.key) {
			t.Errorf("%s: key %q, want %q", c.name, dls[i].Key, c.key)
		}
	}
	comparePoisonWithPython(t, cases, dls)
}

// A poison object with JSON whitespace around it is spliced without the
// whitespace, as the Python SDK builds it.
func TestKafkaPoisonPaddedObject(t *testing.T) {
	scenario(t, "kafka-poison-padded-object", "")
	cases := []poisonCase{
		{"padded-object", []byte("k1"), []byte(" \n{\"x\": 1} \t")},
		{"padded-empty-object", []byte("k2"), []byte("\r\n{ }\n")},
	}
	_, dls := poisonThroughApp(t, "poisonpad", cases)
	comparePoisonWithPython(t, cases, dls)
}

// A poison object that already holds a dead_letter member is wrapped as
// raw, as the Python SDK does, so its old block is not lost.
func TestKafkaPoisonWithDeadLetterMember(t *testing.T) {
	scenario(t, "kafka-poison-dead-letter-member", "issue 35 item 3: a dead_letter member wrapped like Python")
	cases := []poisonCase{
		{"dead-letter-member", []byte("k1"), []byte(`{"x":1,"dead_letter":{"reason":"failed","custom":"k"}}`)},
		{"job-and-dead-letter", []byte("k2"), []byte(`{"job":"urn:babel:x:y","dead_letter":{"reason":"failed"}}`)},
	}
	_, dls := poisonThroughApp(t, "poisondl", cases)
	for i := range cases {
		if !bytes.Contains(dls[i].Value, []byte(`"raw":`)) {
			t.Errorf("%s: the old dead_letter block is not kept under raw: %s", cases[i].name, dls[i].Value)
		}
	}
	comparePoisonWithPython(t, cases, dls)
}

// Null and empty record keys stay null and empty on the dead letter.
func TestKafkaPoisonKeysKept(t *testing.T) {
	scenario(t, "kafka-poison-null-and-empty-keys", "issue 35 item 2: empty keys kept")
	cases := []poisonCase{
		{"null-key", nil, []byte(`{not json`)},
		{"empty-key", []byte{}, []byte(`{not json`)},
		{"empty-key-empty-value", []byte{}, []byte{}},
	}
	_, dls := poisonThroughApp(t, "poisonkeys", cases)
	for i, c := range cases {
		if caseOf(t, dls[i]) != c.name {
			t.Fatalf("dead letter %d is %q, want %q", i, caseOf(t, dls[i]), c.name)
		}
		if (dls[i].Key == nil) != (c.key == nil) || !bytes.Equal(dls[i].Key, c.key) {
			t.Errorf("%s: dead letter key %q (null %v), want %q (null %v)", c.name, dls[i].Key, dls[i].Key == nil, c.key, c.key == nil)
		}
	}
	comparePoisonWithPython(t, cases, dls)
}

// A 900,000-byte value that is not UTF-8 would become a base64 poison
// record above the broker's limit (the Python SDK's would too): our App
// writes a bounded dead letter instead, and the record behind it is handled
// and committed.
func TestKafkaPoisonOversizeBounded(t *testing.T) {
	scenario(t, "kafka-poison-oversize-bounded", "issue 35 item 4: oversize dead letters bounded")
	big := bytes.Repeat([]byte{0xff}, 900_000)
	cases := []poisonCase{{"oversize", []byte("big"), big}}
	py := runPeer[struct {
		Records []b64 `json:"records"`
	}](t, "poison-record", map[string]any{"cases": []any{map[string]any{"input": b64(big), "block": `{"reason":"poison"}`}}}, 30*time.Second)
	t.Logf("the Python SDK's poison record for this value is %d bytes", len(py[0].Records[0]))

	topic, dls := poisonThroughApp(t, "oversize", cases)
	dl := dls[0]
	if len(dl.Value) >= 1_000_000 {
		t.Errorf("dead letter of %d bytes", len(dl.Value))
	}
	var v struct {
		Oversize struct {
			Reason    string `json:"reason"`
			Size      int    `json:"size"`
			Topic     string `json:"topic"`
			Partition *int   `json:"partition"`
			Offset    *int64 `json:"offset"`
		} `json:"oversize"`
		DeadLetter struct {
			Reason string `json:"reason"`
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal(dl.Value, &v); err != nil || v.DeadLetter.Reason != "oversize" || v.Oversize.Reason != "poison" ||
		v.Oversize.Size != len(big) || v.Oversize.Topic != topic || v.Oversize.Partition == nil || *v.Oversize.Partition != 0 ||
		v.Oversize.Offset == nil || *v.Oversize.Offset != 0 {
		t.Errorf("bounded dead letter %.800s (%v): want reason oversize naming the poison original's size, topic, partition 0 and offset 0", dl.Value, err)
	}
	if !bytes.Equal(dl.Key, []byte("big")) {
		t.Errorf("bounded dead letter key %q", dl.Key)
	}
	// The group has committed past both records.
	client := &kafkago.Client{Addr: kafkago.TCP(kafkaBrokers(t)...), Transport: &kafkago.Transport{}}
	deadline := time.Now().Add(20 * time.Second)
	var committed int64
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: topic + "-g", Topics: map[string][]int{topic: {0}}})
		cancel()
		if err == nil && len(res.Topics[topic]) == 1 {
			if committed = res.Topics[topic][0].CommittedOffset; committed == 2 {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("%s", fmt.Sprintf("committed offset %d, want 2", committed))
}

// An empty record key stays empty and a null one null through every hop:
// our retry tier, our re-injector, our dead letter and the Python SDK's
// redrive back to the work topic.
func TestKafkaKeysKeptThroughEveryHop(t *testing.T) {
	scenario(t, "kafka-null-and-empty-keys-every-hop", "issue 35 item 2: empty keys kept")
	topic := brokertest.Topic(t, "keyhops")
	const tier = time.Second
	tr := newKafka(t, kafka.WithGroupID(topic+"-g"), kafka.WithRetryTiers(tier))
	ensureTopics(t, tr, topic, 1)
	runReinjector(t, newKafka(t, kafka.WithGroupID(topic+"-reinject"), kafka.WithRetryTiers(tier)), topic)
	var recs []rawRecord
	ids := map[string][]byte{}
	for _, key := range [][]byte{{}, nil} {
		env, err := babelqueue.Make(urnCreated, map[string]any{"null_key": key == nil}, babelqueue.WithQueue(topic))
		if err != nil {
			t.Fatal(err)
		}
		body, err := env.Encode()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rawRecord{Key: key, Value: body})
		ids[env.Meta.ID] = key
	}
	runPeer[map[string]any](t, "kafka-produce-raw", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "records": recs}, 60*time.Second)

	var mu sync.Mutex
	redriven := map[string]bool{}
	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(2))
	app.Handle(urnCreated, rec.handler(func(env *babelqueue.Envelope) bool {
		mu.Lock()
		defer mu.Unlock()
		return !redriven[env.Meta.ID]
	}))
	runApp(t, app, topic)
	dls := readKafka(t, topic+".dlq", 2, 40*time.Second, 0)
	if len(dls) != 2 {
		t.Fatalf("%d dead letters", len(dls))
	}
	mu.Lock()
	for id := range ids {
		redriven[id] = true
	}
	mu.Unlock()
	res := runPeer[struct {
		Redriven int `json:"redriven"`
	}](t, "kafka-redrive", map[string]any{"brokers": kafkaBrokers(t)[0], "dlq": topic + ".dlq", "group": topic + "-redrive", "timeout": 40}, 60*time.Second)
	if len(res) == 0 || res[len(res)-1].Redriven != 2 {
		t.Fatalf("python redrive: %+v", res)
	}
	// Per topic, what each hop wrote, read by the Python client (which
	// tells a null key from an empty one).
	for _, hop := range []struct {
		topic string
		n     int
	}{{topic, 6}, {kafka.RetryTopic(topic, 1), 2}, {topic + ".dlq", 2}} {
		got := runPeer[pyKafkaRecord](t, "kafka-read", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": hop.topic, "count": hop.n, "timeout": 30}, 60*time.Second)
		if len(got) != hop.n {
			t.Errorf("%s: %d records, want %d", hop.topic, len(got), hop.n)
		}
		for _, r := range got {
			env, err := babelqueue.Decode(r.Value)
			if err != nil {
				t.Fatalf("%s: %s: %v", hop.topic, r.Value, err)
			}
			want := ids[env.Meta.ID]
			if (r.Key == nil) != (want == nil) || !bytes.Equal(r.Key, want) {
				t.Errorf("%s offset %d (attempts %d): key %q (null %v), want %q (null %v)", hop.topic, r.Offset, env.Attempts, r.Key, r.Key == nil, want, want == nil)
			}
		}
	}
}
