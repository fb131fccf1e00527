//go:build interop

package interop

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/babelqueue/babelqueue-go/kafka"
	bqpulsar "github.com/babelqueue/babelqueue-go/pulsar"
	"github.com/babelqueue/babelqueue-go/schema"
)

// The scenarios of issue 40: GDPR field encryption and producer meta
// extensions between our App and the Python SDK, on Kafka and Pulsar.

const urnGDPR = "urn:babel:interop:customer"

// gdprSchema marks a string, a nested string, every element's line and a
// whole object; both SDKs read the marks from it.
const gdprSchema = `{"type":"object","properties":{` +
	`"order_id":{"type":"integer"},` +
	`"email":{"type":"string","minLength":5,"x-gdpr-sensitive":"contact"},` +
	`"profile":{"type":"object","properties":{"full_name":{"type":"string","x-gdpr-sensitive":true}}},` +
	`"addresses":{"type":"array","items":{"type":"object","properties":{"line":{"x-gdpr-sensitive":true}}}},` +
	`"card":{"type":"object","x-gdpr-sensitive":"payment"}}}`

// gdprData is the cleartext: a 64-bit integer beyond float64, non-ASCII
// and HTML-sensitive text, an unmarked sibling in each object.
const gdprData = `{"order_id":12345678901234567890,"email":"alice@example.com",` +
	`"profile":{"full_name":"Zoë Ünal <ceo>","tier":"gold"},` +
	`"addresses":[{"line":"1 Main St","zip":"1000"},{"line":"2 Side St"}],` +
	`"card":{"last4":"4242","exp":[12,2030]},"note":"kept"}`

// personal is what must never be on the wire in clear. The card digits
// are matched as a whole JSON string: a random meta.id or a base64
// ciphertext may contain 4242 by chance.
var personal = []string{"alice@example.com", "Ünal", "Main St", "Side St", `"4242"`}

var (
	keyA = bytes.Repeat([]byte{0xa1}, 32)
	keyB = bytes.Repeat([]byte{0xb2}, 32)
)

// gdprSpec is the protect/unprotect parameter of the peer.
func gdprSpec(key []byte) map[string]any {
	return map[string]any{"key_hex": hex.EncodeToString(key), "schema": json.RawMessage(gdprSchema)}
}

// gdprOptions returns the App options of a service with the schema
// registry as validator and as the source of the sensitive paths.
func gdprOptions(t testing.TB, key []byte) []babelqueue.Option {
	t.Helper()
	reg := schema.NewRegistry()
	if err := reg.Register(urnGDPR, []byte(gdprSchema)); err != nil {
		t.Fatal(err)
	}
	c, err := gdpr.NewAESGCM(key)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gdpr.NewProtector(reg, c)
	if err != nil {
		t.Fatal(err)
	}
	return []babelqueue.Option{babelqueue.WithPayloadValidator(reg), babelqueue.WithFieldProtector(p)}
}

// sameJSON reports whether a and b hold the same JSON value, numbers
// compared by their text.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	decode := func(raw []byte) any {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("not JSON %s: %v", raw, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// assertProtected fails when body carries personal data in clear, or
// when a marked field is not a ciphertext string.
func assertProtected(t testing.TB, what string, body []byte) {
	t.Helper()
	for _, p := range personal {
		if bytes.Contains(body, []byte(p)) {
			t.Errorf("%s carries %q in clear: %s", what, p, body)
		}
	}
	env, err := babelqueue.Decode(body)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var data struct {
		Email   any `json:"email"`
		Card    any `json:"card"`
		OrderID any `json:"order_id"`
	}
	if err := json.Unmarshal(env.Data(), &data); err != nil {
		t.Fatal(err)
	}
	if _, ok := data.Email.(string); !ok {
		t.Errorf("%s: email is not a ciphertext string: %s", what, env.Data())
	}
	if _, ok := data.Card.(string); !ok {
		t.Errorf("%s: card is not one ciphertext string: %s", what, env.Data())
	}
	if !bytes.Contains(env.Data(), []byte(`"order_id":12345678901234567890`)) {
		t.Errorf("%s: the unmarked integer changed: %s", what, env.Data())
	}
}

// pyGDPRDelivery is a Python delivery with the data its handler
// unprotected.
type pyGDPRDelivery struct {
	Record   json.RawMessage `json:"record"`
	Envelope map[string]any  `json:"envelope"`
	Clear    json.RawMessage `json:"clear"`
}

// --- Kafka -------------------------------------------------------------------

// Our App validates the cleartext, protects and publishes; the record
// holds only ciphertext, and the Python SDK's gdpr.unprotect with the same
// key restores the very data we published.
func TestKafkaGDPRGoToPython(t *testing.T) {
	scenario(t, "kafka-gdpr-go-protects-python-unprotects", "issue 40 item 1")
	topic := brokertest.Topic(t, "gdprgo")
	tr := newKafka(t)
	ensureTopics(t, tr, topic, 1)
	app := newApp(t, tr, append(gdprOptions(t, keyA), babelqueue.WithDefaultQueue(topic))...)
	if _, err := app.Publish(bg(t, 30*time.Second), urnGDPR, json.RawMessage(gdprData)); err != nil {
		t.Fatal(err)
	}
	rec := readKafka(t, topic, 1, 30*time.Second, 0)[0]
	assertProtected(t, "our record", rec.Value)
	got := runPeer[pyGDPRDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "group": topic + "-py",
		"urns": []string{urnGDPR}, "unprotect": gdprSpec(keyA), "count": 1, "timeout": 60}, 90*time.Second)
	if len(got) != 1 || len(got[0].Clear) == 0 {
		t.Fatalf("python deliveries %+v", got)
	}
	if !sameJSON(t, got[0].Clear, []byte(gdprData)) {
		t.Errorf("python unprotected\n%s\nwant\n%s", got[0].Clear, gdprData)
	}
}

// The Python SDK protects and publishes; our App unprotects, validates
// the cleartext and hands the handler the data Python started from.
func TestKafkaGDPRPythonToGo(t *testing.T) {
	scenario(t, "kafka-gdpr-python-protects-go-handles-cleartext", "issue 40 item 1")
	topic := brokertest.Topic(t, "gdprpy")
	tr := newKafka(t, kafka.WithGroupID(topic+"-g"))
	ensureTopics(t, tr, topic, 1)
	pub := runPeer[pyPublished](t, "kafka-publish", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic,
		"messages": []any{map[string]any{"urn": urnGDPR, "data": json.RawMessage(gdprData), "protect": gdprSpec(keyA)}}}, 60*time.Second)
	if len(pub) != 1 {
		t.Fatalf("peer published %d", len(pub))
	}
	assertProtected(t, "the python record", pub[0].Body)
	rec := newRecorder()
	app := newApp(t, tr, append(gdprOptions(t, keyA), babelqueue.WithDefaultQueue(topic))...)
	app.Handle(urnGDPR, rec.handler(nil))
	runApp(t, app, topic)
	d := rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == pub[0].ID })
	if !sameJSON(t, d.env.Data(), []byte(gdprData)) {
		t.Errorf("handler got\n%s\nwant\n%s", d.env.Data(), gdprData)
	}
}

// A consumer holding the wrong key never handles the message: the Python
// SDK dead-letters ours with its reason (failed, a DecryptError), and our
// App dead-letters Python's with decrypt_failed after its attempts. Both
// dead letters still hold only ciphertext.
func TestKafkaGDPRWrongKeyDeadLetters(t *testing.T) {
	scenario(t, "kafka-gdpr-wrong-key-dead-letters-both-sides", "issue 40 item 1")
	goTopic, pyTopic := brokertest.Topic(t, "gdprwk-go"), brokertest.Topic(t, "gdprwk-py")
	tr := newKafka(t, kafka.WithGroupID(pyTopic+"-g"))
	ensureTopics(t, tr, goTopic, 1)
	ensureTopics(t, tr, pyTopic, 1)

	producer := newApp(t, tr, append(gdprOptions(t, keyA), babelqueue.WithDefaultQueue(goTopic))...)
	if _, err := producer.Publish(bg(t, 30*time.Second), urnGDPR, json.RawMessage(gdprData)); err != nil {
		t.Fatal(err)
	}
	runPeer[pyGDPRDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": goTopic, "group": goTopic + "-py",
		"urns": []string{urnGDPR}, "unprotect": gdprSpec(keyB), "max_attempts": 1, "dead_letter": true, "count": 1, "timeout": 60}, 90*time.Second)
	pyDead := readKafka(t, goTopic+".dlq", 1, 30*time.Second, 0)[0].Value
	env, err := babelqueue.Decode(pyDead)
	if err != nil || env.DeadLetter == nil || env.DeadLetter.Reason != "failed" || env.DeadLetter.Lang != "python" ||
		env.DeadLetter.Error == nil || !strings.Contains(strings.ToLower(*env.DeadLetter.Error), "decrypt") {
		t.Errorf("python dead letter %s (%v): want reason failed naming the decrypt error", pyDead, err)
	}
	assertProtected(t, "the python dead letter", pyDead)

	pub := runPeer[pyPublished](t, "kafka-publish", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": pyTopic,
		"messages": []any{map[string]any{"urn": urnGDPR, "data": json.RawMessage(gdprData), "protect": gdprSpec(keyA)}}}, 60*time.Second)
	rec := newRecorder()
	app := newApp(t, tr, append(gdprOptions(t, keyB), babelqueue.WithDefaultQueue(pyTopic), babelqueue.WithMaxAttempts(2))...)
	app.Handle(urnGDPR, rec.handler(nil))
	runApp(t, app, pyTopic)
	goDead := readKafka(t, pyTopic+".dlq", 1, 40*time.Second, 0)[0].Value
	env, err = babelqueue.Decode(goDead)
	if err != nil || env.DeadLetter == nil || env.DeadLetter.Reason != wire.ReasonDecryptFailed || env.DeadLetter.Lang != "go" ||
		env.Attempts != 2 || env.Meta.ID != pub[0].ID {
		t.Errorf("our dead letter %s (%v): want reason %s after 2 attempts", goDead, err, wire.ReasonDecryptFailed)
	}
	assertProtected(t, "our dead letter", goDead)
	if n := len(rec.all()); n != 0 {
		t.Errorf("our handler ran %d times on unreadable data", n)
	}
}

// extOf returns the raw meta.ext of body.
func extOf(t testing.TB, body []byte) string {
	t.Helper()
	env, err := babelqueue.Decode(body)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return string(env.MetaExt())
}

// Our meta.ext block survives the Python SDK's retry (a re-encoded tier
// record, carried back by our re-injector) and its dead letter byte for
// byte.
func TestKafkaMetaExtGoThroughPython(t *testing.T) {
	scenario(t, "kafka-meta-ext-go-survives-python-retry-dlq", "issue 40 item 2")
	topic := brokertest.Topic(t, "extgo")
	tr := newKafka(t, kafka.WithRetryTiers(time.Second), kafka.WithGroupID(topic+"-reinject"))
	ensureTopics(t, tr, topic, 1)
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic))
	if _, err := app.Publish(bg(t, 30*time.Second), urnCreated, interopData, babelqueue.WithEnvelopeOptions(
		wire.WithMetaExt("acme", map[string]any{"tenant": "t-9", "route": []any{"eu", "é <b>"}, "big": json.Number("12345678901234567890")}),
		wire.WithMeta("x-origin", "billing"))); err != nil {
		t.Fatal(err)
	}
	published := readKafka(t, topic, 1, 30*time.Second, 0)[0].Value
	want := extOf(t, published)
	if want == "" {
		t.Fatalf("no meta.ext in %s", published)
	}
	runReinjector(t, tr, topic)
	runPeer[pyDelivery](t, "kafka-consume", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic, "group": topic + "-py",
		"urns": []string{urnCreated}, "tiers_ms": []int{1000}, "fail": true, "max_attempts": 2, "dead_letter": true, "count": 2, "timeout": 60}, 90*time.Second)
	retried := readKafka(t, kafka.RetryTopic(topic, 1), 1, 30*time.Second, 0)[0].Value
	dead := readKafka(t, topic+".dlq", 1, 30*time.Second, 0)[0].Value
	for name, b := range map[string][]byte{"python retry": retried, "python dead letter": dead} {
		if got := extOf(t, b); got != want {
			t.Errorf("%s meta.ext %s, want %s", name, got, want)
		}
		if v, ok := mustDecode(t, b).MetaValue("x-origin"); !ok || string(v) != `"billing"` {
			t.Errorf("%s lost meta.x-origin: %s", name, b)
		}
	}
}

func mustDecode(t testing.TB, b []byte) *babelqueue.Envelope {
	t.Helper()
	env, err := babelqueue.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// A Python meta.ext block reaches our handler on every delivery and
// survives our retry and dead letter byte for byte.
func TestKafkaMetaExtPythonThroughGo(t *testing.T) {
	scenario(t, "kafka-meta-ext-python-survives-go-retry-dlq", "issue 40 item 2")
	topic := brokertest.Topic(t, "extpy")
	tr := newKafka(t, kafka.WithGroupID(topic+"-g"))
	ensureTopics(t, tr, topic, 1)
	pub := runPeer[pyPublished](t, "kafka-publish", map[string]any{"brokers": kafkaBrokers(t)[0], "topic": topic,
		"messages": []any{map[string]any{"urn": urnCreated, "data": interopData,
			"meta": map[string]any{"ext": map[string]any{"pyco": map[string]any{"tenant": "t-7", "n": []any{1, 2.5}, "text": "ü <i>"}}}}}}, 60*time.Second)
	want := extOf(t, pub[0].Body)
	if want == "" {
		t.Fatalf("no meta.ext in %s", pub[0].Body)
	}
	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(2))
	app.Handle(urnCreated, rec.handler(func(*babelqueue.Envelope) bool { return true }))
	runApp(t, app, topic)
	dead := readKafka(t, topic+".dlq", 1, 40*time.Second, 0)[0].Value
	if got := extOf(t, dead); got != want {
		t.Errorf("our dead letter meta.ext %s, want %s", got, want)
	}
	retried := readKafka(t, topic, 2, 30*time.Second, 0)[1].Value
	if got := extOf(t, retried); got != want {
		t.Errorf("our retry meta.ext %s, want %s", got, want)
	}
	for _, d := range rec.all() {
		if got := string(d.env.MetaExt()); got != want {
			t.Errorf("handler (attempts %d) read meta.ext %s, want %s", d.env.Attempts, got, want)
		}
	}
	if n := len(rec.all()); n != 2 {
		t.Errorf("handler ran %d times, want 2", n)
	}
}

// --- Pulsar ------------------------------------------------------------------

func TestPulsarGDPRGoToPython(t *testing.T) {
	scenario(t, "pulsar-gdpr-go-protects-python-unprotects", "issue 40 item 1")
	topic := brokertest.Topic(t, "gdprgo")
	reader := pulsarReader(t, pulsarClient(t), topic, "raw")
	py := startPeer(t, "pulsar-consume", map[string]any{"url": pulsarURL(t), "topic": topic, "subscription": "py", "earliest": true,
		"urns": []string{urnGDPR}, "unprotect": gdprSpec(keyA), "count": 1, "timeout": 60})
	var ready map[string]any
	py.next(t, 30*time.Second, &ready)
	app := newApp(t, newPulsar(t), append(gdprOptions(t, keyA), babelqueue.WithDefaultQueue(topic))...)
	if _, err := app.Publish(bg(t, 30*time.Second), urnGDPR, json.RawMessage(gdprData)); err != nil {
		t.Fatal(err)
	}
	assertProtected(t, "our message", mustReceive(t, reader, 20*time.Second).Payload())
	got := decodeLines[pyGDPRDelivery](t, py.finish(t, 60*time.Second))
	if len(got) != 1 || !sameJSON(t, got[0].Clear, []byte(gdprData)) {
		t.Fatalf("python unprotected %+v, want %s", got, gdprData)
	}
}

func TestPulsarGDPRPythonToGo(t *testing.T) {
	scenario(t, "pulsar-gdpr-python-protects-go-handles-cleartext", "issue 40 item 1")
	topic := brokertest.Topic(t, "gdprpy")
	rec := newRecorder()
	app := newApp(t, newPulsar(t), append(gdprOptions(t, keyA), babelqueue.WithDefaultQueue(topic))...)
	app.Handle(urnGDPR, rec.handler(nil))
	runApp(t, app, topic)
	pub := runPeer[pyPublished](t, "pulsar-publish", map[string]any{"url": pulsarURL(t), "topic": topic,
		"messages": []any{map[string]any{"urn": urnGDPR, "data": json.RawMessage(gdprData), "protect": gdprSpec(keyA)}}}, 60*time.Second)
	assertProtected(t, "the python message", pub[0].Body)
	d := rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == pub[0].ID })
	if !sameJSON(t, d.env.Data(), []byte(gdprData)) {
		t.Errorf("handler got\n%s\nwant\n%s", d.env.Data(), gdprData)
	}
}

func TestPulsarGDPRWrongKeyDeadLetters(t *testing.T) {
	scenario(t, "pulsar-gdpr-wrong-key-dead-letters-both-sides", "issue 40 item 1")
	goTopic, pyTopic := brokertest.Topic(t, "gdprwk-go"), brokertest.Topic(t, "gdprwk-py")
	c := pulsarClient(t)
	pyDLQ := pulsarReader(t, c, bqpulsar.DeadLetterQueue(goTopic), "raw")
	goDLQ := pulsarReader(t, c, bqpulsar.DeadLetterQueue(pyTopic), "raw")

	py := startPeer(t, "pulsar-consume", map[string]any{"url": pulsarURL(t), "topic": goTopic, "subscription": "py", "earliest": true,
		"urns": []string{urnGDPR}, "unprotect": gdprSpec(keyB), "max_attempts": 1, "dead_letter": true, "count": 1, "timeout": 60})
	var ready map[string]any
	py.next(t, 30*time.Second, &ready)
	producer := newApp(t, newPulsar(t), append(gdprOptions(t, keyA), babelqueue.WithDefaultQueue(goTopic))...)
	if _, err := producer.Publish(bg(t, 30*time.Second), urnGDPR, json.RawMessage(gdprData)); err != nil {
		t.Fatal(err)
	}
	pyDead := mustReceive(t, pyDLQ, 60*time.Second).Payload()
	env, err := babelqueue.Decode(pyDead)
	if err != nil || env.DeadLetter == nil || env.DeadLetter.Reason != "failed" || env.DeadLetter.Lang != "python" ||
		env.DeadLetter.Error == nil || !strings.Contains(strings.ToLower(*env.DeadLetter.Error), "decrypt") {
		t.Errorf("python dead letter %s (%v): want reason failed naming the decrypt error", pyDead, err)
	}
	assertProtected(t, "the python dead letter", pyDead)
	py.wait(t, 30*time.Second)

	rec := newRecorder()
	app := newApp(t, newPulsar(t), append(gdprOptions(t, keyB), babelqueue.WithDefaultQueue(pyTopic), babelqueue.WithMaxAttempts(2))...)
	app.Handle(urnGDPR, rec.handler(nil))
	runApp(t, app, pyTopic)
	pub := runPeer[pyPublished](t, "pulsar-publish", map[string]any{"url": pulsarURL(t), "topic": pyTopic,
		"messages": []any{map[string]any{"urn": urnGDPR, "data": json.RawMessage(gdprData), "protect": gdprSpec(keyA)}}}, 60*time.Second)
	goDead := mustReceive(t, goDLQ, 60*time.Second).Payload()
	env, err = babelqueue.Decode(goDead)
	if err != nil || env.DeadLetter == nil || env.DeadLetter.Reason != wire.ReasonDecryptFailed || env.Attempts != 2 || env.Meta.ID != pub[0].ID {
		t.Errorf("our dead letter %s (%v): want reason %s after 2 attempts", goDead, err, wire.ReasonDecryptFailed)
	}
	assertProtected(t, "our dead letter", goDead)
	if n := len(rec.all()); n != 0 {
		t.Errorf("our handler ran %d times on unreadable data", n)
	}
}

func TestPulsarMetaExtAcrossLanguages(t *testing.T) {
	scenario(t, "pulsar-meta-ext-survives-retry-dlq-both-ways", "issue 40 item 2")
	goTopic, pyTopic := brokertest.Topic(t, "extgo"), brokertest.Topic(t, "extpy")
	c := pulsarClient(t)
	pyDLQ := pulsarReader(t, c, bqpulsar.DeadLetterQueue(goTopic), "raw")
	goDLQ := pulsarReader(t, c, bqpulsar.DeadLetterQueue(pyTopic), "raw")

	// Ours through Python's retry and dead letter.
	py := startPeer(t, "pulsar-consume", map[string]any{"url": pulsarURL(t), "topic": goTopic, "subscription": "py", "earliest": true,
		"urns": []string{urnCreated}, "fail": true, "max_attempts": 2, "dead_letter": true, "count": 2, "timeout": 60})
	var ready map[string]any
	py.next(t, 30*time.Second, &ready)
	producer := newApp(t, newPulsar(t), babelqueue.WithDefaultQueue(goTopic))
	env, err := babelqueue.Make(urnCreated, interopData, wire.WithMetaExt("acme", map[string]any{"tenant": "t-9", "big": json.Number("12345678901234567890")}))
	if err != nil {
		t.Fatal(err)
	}
	want := string(env.MetaExt())
	if _, err := producer.Publish(bg(t, 30*time.Second), urnCreated, interopData, babelqueue.WithEnvelopeOptions(
		wire.WithMetaExt("acme", map[string]any{"tenant": "t-9", "big": json.Number("12345678901234567890")}))); err != nil {
		t.Fatal(err)
	}
	if got := extOf(t, mustReceive(t, pyDLQ, 60*time.Second).Payload()); got != want {
		t.Errorf("python dead letter meta.ext %s, want %s", got, want)
	}
	for _, d := range decodeLines[pyDelivery](t, py.finish(t, 60*time.Second)) {
		meta, _ := d.Envelope["meta"].(map[string]any)
		if _, ok := meta["ext"]; !ok {
			t.Errorf("python handler saw no meta.ext: %v", d.Envelope)
		}
	}

	// Python's through our retry and dead letter.
	rec := newRecorder()
	app := newApp(t, newPulsar(t), babelqueue.WithDefaultQueue(pyTopic), babelqueue.WithMaxAttempts(2))
	app.Handle(urnCreated, rec.handler(func(*babelqueue.Envelope) bool { return true }))
	runApp(t, app, pyTopic)
	pub := runPeer[pyPublished](t, "pulsar-publish", map[string]any{"url": pulsarURL(t), "topic": pyTopic,
		"messages": []any{map[string]any{"urn": urnCreated, "data": interopData,
			"meta": map[string]any{"ext": map[string]any{"pyco": map[string]any{"tenant": "t-7", "n": []any{1, 2.5}}}}}}}, 60*time.Second)
	pyWant := extOf(t, pub[0].Body)
	if got := extOf(t, mustReceive(t, goDLQ, 60*time.Second).Payload()); got != pyWant || pyWant == "" {
		t.Errorf("our dead letter meta.ext %s, want %s", got, pyWant)
	}
	for _, d := range rec.all() {
		if got := string(d.env.MetaExt()); got != pyWant {
			t.Errorf("handler (attempts %d) read meta.ext %s, want %s", d.env.Attempts, got, pyWant)
		}
	}
}
