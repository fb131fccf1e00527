package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// The benchmarks compare the codec with the plain way of writing an
// envelope codec: a struct with map[string]any data through encoding/json,
// decoding a second time to resolve the urn alias. The plain way loses
// unknown keys and the digits of large integers; the codec keeps both.
//
// Run:  go test -run '^$' -bench Codec -benchmem ./core/
// Each pair prints one line:
//
//	bench: <name> ours=<ns/op> raw=<ns/op> ratio=<ours/raw>

// benchData is a typical business payload.
func benchData() map[string]any {
	return map[string]any{
		"order_id": 1042,
		"customer": map[string]any{"id": "c-77", "email": "ada@example.com", "tier": "gold"},
		"lines":    []any{map[string]any{"sku": "A-1", "qty": 2, "price": 19.5}, map[string]any{"sku": "B-7", "qty": 1, "price": 5.25}},
		"currency": "EUR",
		"note":     "leave at the door",
	}
}

// benchBody is a received envelope as another SDK writes it, with an
// unknown key and a large integer.
var benchBody = []byte(`{"job":"urn:babel:orders:created","trace_id":"0b6f4a2e-5c1d-4e8f-9a7b-3c2d1e0f9a8b",` +
	`"data":{"order_id":1042,"ledger_ref":12345678901234567890,"customer":{"id":"c-77","email":"ada@example.com","tier":"gold"},` +
	`"lines":[{"sku":"A-1","qty":2,"price":19.5},{"sku":"B-7","qty":1,"price":5.25}],"currency":"EUR","note":"leave at the door"},` +
	`"meta":{"id":"6c9e2f0a-1b3d-4c5e-8f7a-9b0c1d2e3f4a","queue":"orders","lang":"php","schema_version":1,"created_at":1749132727000},` +
	`"attempts":1,"x_tenant":"eu-1"}`)

type plainMeta struct {
	ID            string `json:"id"`
	Queue         string `json:"queue"`
	Lang          string `json:"lang"`
	SchemaVersion int    `json:"schema_version"`
	CreatedAt     int64  `json:"created_at"`
}

type plainEnvelope struct {
	Job      string         `json:"job"`
	TraceID  string         `json:"trace_id"`
	Data     map[string]any `json:"data"`
	Meta     plainMeta      `json:"meta"`
	Attempts int            `json:"attempts"`
}

type plainAlias struct {
	URN string `json:"urn"`
}

func plainEncode(e *plainEnvelope) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func plainDecode(body []byte) (*plainEnvelope, error) {
	var e plainEnvelope
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, err
	}
	var a plainAlias
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	if IsBlank(e.Job) {
		e.Job = a.URN
	}
	if IsBlank(e.Job) || IsBlank(e.TraceID) || e.Data == nil || e.Meta.SchemaVersion != 1 || e.Attempts < 0 {
		return nil, ErrPoison
	}
	return &e, nil
}

func benchOursRoundTrip(b *testing.B) {
	b.ReportAllocs()
	data := benchData()
	for b.Loop() {
		env, err := Make("urn:babel:orders:created", data, WithQueue("orders"))
		if err != nil {
			b.Fatal(err)
		}
		body, err := env.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPlainRoundTrip(b *testing.B) {
	b.ReportAllocs()
	data := benchData()
	for b.Loop() {
		env := &plainEnvelope{
			Job: "urn:babel:orders:created", TraceID: NewID(), Data: data,
			Meta: plainMeta{ID: NewID(), Queue: "orders", Lang: Lang, SchemaVersion: 1, CreatedAt: time.Now().UnixMilli()},
		}
		body, err := plainEncode(env)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plainDecode(body); err != nil {
			b.Fatal(err)
		}
	}
}

func benchOursDecode(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if _, err := Decode(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPlainDecode(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if _, err := plainDecode(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// benchOursDecodeDataMap is a consumer whose handler reads data as a map:
// the lazy data is decoded once, on demand.
func benchOursDecodeDataMap(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		env, err := Decode(benchBody)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.DataMap(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchOursRetry is the retry path: decode, then rewrite attempts in the
// received bytes.
func benchOursRetry(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		env, err := Decode(benchBody)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := SetAttempts(benchBody, env.Attempts+1); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPlainRetry re-marshals the plain struct (and so drops the unknown
// key and rounds the large integer).
func benchPlainRetry(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		env, err := plainDecode(benchBody)
		if err != nil {
			b.Fatal(err)
		}
		env.Attempts++
		if _, err := plainEncode(env); err != nil {
			b.Fatal(err)
		}
	}
}

// perOp records the ns/op of the last run of a sub-benchmark (the run
// with the largest b.N, whose result go test reports).
type perOp struct{ ns float64 }

func recording(fn func(*testing.B), r *perOp) func(*testing.B) {
	return func(b *testing.B) {
		fn(b)
		if b.N > 0 {
			r.ns = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		}
	}
}

// pair runs ours and raw as sub-benchmarks and prints the ratio line
// (see the file comment).
func pair(b *testing.B, name string, ours, raw func(*testing.B)) {
	var o, r perOp
	b.Run("ours", recording(ours, &o))
	b.Run("baseline", recording(raw, &r))
	if o.ns > 0 && r.ns > 0 {
		fmt.Printf("bench: %s ours=%.0fns/op raw=%.0fns/op ratio=%.2f\n", name, o.ns, r.ns, o.ns/r.ns)
	}
}

func BenchmarkCodecMakeEncodeDecode(b *testing.B) {
	pair(b, "Make+Encode+Decode", benchOursRoundTrip, benchPlainRoundTrip)
}

func BenchmarkCodecDecode(b *testing.B) {
	pair(b, "Decode", benchOursDecode, benchPlainDecode)
}

// BenchmarkCodecDecodeDataMap compares a consumer whose handler reads data
// as a map with the baseline decode (which always builds the map).
func BenchmarkCodecDecodeDataMap(b *testing.B) {
	pair(b, "Decode+DataMap", benchOursDecodeDataMap, benchPlainDecode)
}

// plainEnvelopeBoth reads job and urn in one pass: the cheapest plain
// decoder, kept as a harder reference than the two-pass baseline.
type plainEnvelopeBoth struct {
	plainEnvelope
	URN string `json:"urn"`
}

func benchPlainDecodeOnePass(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		var e plainEnvelopeBoth
		if err := json.Unmarshal(benchBody, &e); err != nil {
			b.Fatal(err)
		}
		if IsBlank(e.Job) {
			e.Job = e.URN
		}
	}
}

func BenchmarkCodecDecodeOnePassBaseline(b *testing.B) {
	pair(b, "Decode(vs one-pass baseline)", benchOursDecode, benchPlainDecodeOnePass)
}

func BenchmarkCodecRetry(b *testing.B) {
	pair(b, "Retry(Decode+SetAttempts)", benchOursRetry, benchPlainRetry)
}

func BenchmarkCodecSetAttempts(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SetAttempts(benchBody, 2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCodecAccepts(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if err := Accepts(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBaselineLosesWhatTheCodecKeeps documents why the baseline is not an
// option: it drops unknown keys and rounds large integers, which the codec
// keeps (CONTRACT.md 2.2, 2.3).
func TestBaselineLosesWhatTheCodecKeeps(t *testing.T) {
	plain, err := plainDecode(benchBody)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := plainEncode(plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(pb, []byte("x_tenant")) || bytes.Contains(pb, []byte("12345678901234567890")) {
		t.Fatalf("baseline unexpectedly kept the unknown key and the digits: %s", pb)
	}
	env, err := Decode(benchBody)
	if err != nil {
		t.Fatal(err)
	}
	env.Attempts++
	ob, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ob, []byte(`"x_tenant":"eu-1"`)) || !bytes.Contains(ob, []byte(`"ledger_ref":12345678901234567890`)) {
		t.Fatalf("codec lost the unknown key or the digits: %s", ob)
	}
}
