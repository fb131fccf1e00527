//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/kafka"
	bqpulsar "github.com/babelqueue/babelqueue-go/pulsar"
	"github.com/babelqueue/babelqueue-go/schema"
)

// These scenarios pin the Python SDK's own differences that
// COMPATIBILITY.md lists, on the pinned wheel: when an upgrade of the pin
// changes one, its scenario fails and the document is updated with it.

// A Python retry on Kafka re-encodes the whole body, drops every header
// that is not projected from it (traceparent), and stamps the tier record
// with meta.created_at (seen here on a CreateTime tier topic).
func TestPythonKafkaRetryDeviations(t *testing.T) {
	scenario(t, "python-kafka-retry-deviations", "")
	topic := brokertest.Topic(t, "pyretrydev")
	tr := newKafka(t)
	ensureTopics(t, tr, topic, 1)
	client := &kafkago.Client{Addr: kafkago.TCP(kafkaBrokers(t)...), Transport: &kafkago.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := client.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{Topic: kafka.RetryTopic(topic, 1), NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil || res.Errors[kafka.RetryTopic(topic, 1)] != nil {
		t.Fatalf("create the CreateTime tier: %v %v", err, res)
	}
	old := time.Now().Add(-time.Hour).UnixMilli()
	body := fmt.Sprintf(`{"job": "%s", "trace_id": "t-1", "data": {"n": 1.0, "u": "\u00e9"}, "meta": {"id": "id-%s", "queue": "%s", "lang": "node", "schema_version": 1, "created_at": %d}, "attempts": 0}`,
		urnCreated, topic, topic, old)
	runPeer[map[string]any](t, "kafka-produce-raw", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "records": []rawRecord{{
		Key: []byte("k"), Value: []byte(body), Headers: [][2]string{{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, {"bq-attempts", "0"}}}}}, 60*time.Second)
	runPeer[pyDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "group": topic + "-py",
		"urns": []string{urnCreated}, "tiers_ms": []int{60000}, "fail": true, "count": 1, "timeout": 60}, 90*time.Second)
	tier := runPeer[pyKafkaRecord](t, "kafka-read", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": kafka.RetryTopic(topic, 1), "count": 1, "timeout": 20}, 40*time.Second)
	if len(tier) != 1 {
		t.Fatalf("tier holds %d records", len(tier))
	}
	r := tier[0]
	want := fmt.Sprintf(`{"job":"%s","trace_id":"t-1","data":{"n":1.0,"u":"é"},"meta":{"id":"id-%s","queue":"%s","lang":"node","schema_version":1,"created_at":%d},"attempts":1}`,
		urnCreated, topic, topic, old)
	if string(r.Value) != want {
		t.Errorf("python tier record\n%s\nwant the whole body re-encoded\n%s", r.Value, want)
	}
	if hs := strings.Join(r.headerList(t), " "); strings.Contains(hs, "traceparent") || !strings.Contains(hs, "bq-attempts=1") {
		t.Errorf("python tier record headers %s: want traceparent dropped, bq-attempts=1", hs)
	}
	if r.TimestampType != 1 || r.Timestamp != old {
		t.Errorf("python tier record timestamp type %d value %d, want CreateTime %d (created_at)", r.TimestampType, r.Timestamp, old)
	}
	if string(r.Key) != "k" {
		t.Errorf("python tier record key %q", r.Key)
	}
}

// A Python poison dead letter on Kafka says dead_letter.attempts 0 (the
// bq-attempts header, absent here); ours says 1 (this delivery counted).
// Both keep the key, null and empty.
func TestPythonKafkaPoisonAttempts(t *testing.T) {
	scenario(t, "python-kafka-poison-attempts", "")
	topic := brokertest.Topic(t, "pypoison")
	tr := newKafka(t)
	ensureTopics(t, tr, topic, 1)
	runPeer[map[string]any](t, "kafka-produce-raw", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "records": []rawRecord{
		{Key: []byte("k"), Value: []byte("{not json")}, {Key: []byte{}, Value: []byte("{not json")}, {Key: nil, Value: []byte("[1]")}}}, 60*time.Second)
	runPeer[pyDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "group": topic + "-py",
		"dead_letter": true, "count": 3, "timeout": 60}, 90*time.Second)
	dls := runPeer[pyKafkaRecord](t, "kafka-read", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic + ".dlq", "count": 3, "timeout": 20}, 40*time.Second)
	if len(dls) != 3 {
		t.Fatalf("python wrote %d dead letters", len(dls))
	}
	for i, key := range [][]byte{[]byte("k"), {}, nil} {
		var v struct {
			DeadLetter struct {
				Reason   string `json:"reason"`
				Attempts int    `json:"attempts"`
				Lang     string `json:"lang"`
			} `json:"dead_letter"`
		}
		if err := json.Unmarshal(dls[i].Value, &v); err != nil || v.DeadLetter.Reason != "poison" || v.DeadLetter.Attempts != 0 || v.DeadLetter.Lang != "python" {
			t.Errorf("python poison dead letter %s (%v): want reason poison, attempts 0", dls[i].Value, err)
		}
		if !bytes.Equal(dls[i].Key, key) || (dls[i].Key == nil) != (key == nil) {
			t.Errorf("python poison dead letter key %q (null %v), want %q (null %v)", dls[i].Key, dls[i].Key == nil, key, key == nil)
		}
	}
}

// A Python Pulsar consumer subscribes at Latest unless told otherwise (a
// message published before it subscribed is not delivered to it), and its
// Pulsar retry drops traceparent and the key, sets no event time and
// re-encodes the body.
func TestPythonPulsarDeviations(t *testing.T) {
	scenario(t, "python-pulsar-latest-and-retry-deviations", "")
	topic := brokertest.Topic(t, "pypulsardev")
	c := pulsarClient(t)
	reader := pulsarReader(t, c, topic, "raw")
	app := newApp(t, newPulsar(t), babelqueue.WithDefaultQueue(topic))
	ctx := bg(t, 30*time.Second)
	before, err := app.Publish(ctx, urnCreated, map[string]any{"n": "before"})
	if err != nil {
		t.Fatal(err)
	}
	mustReceive(t, reader, 20*time.Second)
	py := startPeer(t, "pulsar-consume", map[string]any{"url": pulsarURL(t), "topic": topic, "subscription": "py",
		"urns": []string{urnCreated}, "fail": true, "max_attempts": 2, "dead_letter": true, "count": 2, "timeout": 60})
	var ready map[string]any
	py.next(t, 30*time.Second, &ready)
	after, err := app.PublishWithHeaders(ctx, urnCreated, map[string]any{"n": "after"},
		map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, babelqueue.WithKey([]byte("k")))
	if err != nil {
		t.Fatal(err)
	}
	first := mustReceive(t, reader, 20*time.Second)
	retry := mustReceive(t, reader, 30*time.Second)
	got := decodeLines[pyDelivery](t, py.finish(t, 60*time.Second))
	for _, d := range got {
		meta, _ := d.Envelope["meta"].(map[string]any)
		if meta["id"] == before {
			t.Errorf("the python consumer got the message published before it subscribed: it starts at Earliest now")
		}
	}
	env, err := babelqueue.Decode(retry.Payload())
	if err != nil || env.Meta.ID != after || env.Attempts != 1 {
		t.Fatalf("python retry %s (%v)", retry.Payload(), err)
	}
	if _, ok := retry.Properties()["traceparent"]; ok || first.Properties()["traceparent"] == "" {
		t.Errorf("python retry properties %v: want traceparent dropped", retry.Properties())
	}
	if et := retry.EventTime(); !et.IsZero() && et.UnixMilli() != 0 {
		t.Errorf("python retry has event time %v: want none", et)
	}
	if first.Key() != "k" || retry.Key() != "" {
		t.Errorf("keys: ours %q, python retry %q: want the python retry to drop it", first.Key(), retry.Key())
	}
	dl := mustReceive(t, pulsarReader(t, c, bqpulsar.DeadLetterQueue(topic), "raw"), 30*time.Second)
	if dle, err := babelqueue.Decode(dl.Payload()); err != nil || dle.DeadLetter == nil || dle.DeadLetter.Attempts != 2 {
		t.Errorf("python dead letter %s (%v)", dl.Payload(), err)
	}
}

// A schema that marks an object and also a field inside it: Python's
// gdpr.unprotect decrypts the object, then takes the field's cleartext for
// a ciphertext and raises DecryptError, so it cannot read back what its
// own protect wrote; ours treats the inner mark as part of the outer value
// and restores the data.
func TestPythonGDPRNestedMarks(t *testing.T) {
	scenario(t, "python-gdpr-nested-marks", "")
	const nested = `{"type":"object","properties":{"card":{"x-gdpr-sensitive":true,"properties":{"last4":{"x-gdpr-sensitive":true}}}}}`
	const data = `{"card":{"last4":"4242","exp":"12/30"},"n":1}`
	key := hex.EncodeToString(keyA)
	prot := runPeer[struct {
		Data  json.RawMessage `json:"data"`
		Error string          `json:"error"`
	}](t, "gdpr", map[string]any{"op": "protect", "data": json.RawMessage(data), "schema": json.RawMessage(nested), "key_hex": key}, 30*time.Second)
	if len(prot) != 1 || prot[0].Error != "" {
		t.Fatalf("python protect: %+v", prot)
	}
	back := runPeer[struct {
		Data  json.RawMessage `json:"data"`
		Error string          `json:"error"`
	}](t, "gdpr", map[string]any{"op": "unprotect", "data": prot[0].Data, "schema": json.RawMessage(nested), "key_hex": key}, 30*time.Second)
	if len(back) != 1 || back[0].Error != "DecryptError" {
		t.Errorf("python unprotect of its own nested marks: %+v, want DecryptError (fixed upstream? update COMPATIBILITY.md)", back)
	}
	marks, err := schema.SensitivePaths([]byte(nested))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range marks {
		names = append(names, m.Path)
	}
	c, err := gdpr.NewAESGCM(keyA)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := gdpr.Unprotect(prot[0].Data, gdpr.NewPaths(names...), c)
	if err != nil || !sameJSON(t, ours, []byte(data)) {
		t.Errorf("our unprotect of the python data: %s, %v; want %s", ours, err, data)
	}
}
