package wire

import (
	"strings"
	"testing"
)

// benchStructData is the data of the kafka publish-batch bench: a small
// struct padded so that its envelope is about 300 bytes.
type benchStructData struct {
	OrderID string `json:"order_id"`
	Note    string `json:"note"`
}

// BenchmarkCodecMakeAppendStruct is the publish path of one envelope with
// struct data: Make, then AppendEncode into a reused buffer.
func BenchmarkCodecMakeAppendStruct(b *testing.B) {
	benchMakeAppend(b, benchStructData{OrderID: "ord-0000001", Note: strings.Repeat("x", 60)})
}

// BenchmarkCodecMakeAppendMap is the same with map data.
func BenchmarkCodecMakeAppendMap(b *testing.B) {
	benchMakeAppend(b, benchData())
}

// benchMakeAppend makes an envelope of data and appends its encoding to a
// reused buffer, once per iteration.
func benchMakeAppend[T any](b *testing.B, data T) {
	b.ReportAllocs()
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		env, err := Make("urn:babel:orders:created", data, WithQueue("orders"))
		if err != nil {
			b.Fatal(err)
		}
		if buf, err = env.AppendEncode(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecNewIDPair is the two ids Make draws for a new envelope.
func BenchmarkCodecNewIDPair(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if t, id := newIDPair(); len(t)+len(id) != 72 {
			b.Fatal(t, id)
		}
	}
}

// BenchmarkCodecAppendJSONString writes the strings of a fresh envelope.
func BenchmarkCodecAppendJSONString(b *testing.B) {
	b.ReportAllocs()
	strs := []string{"urn:babel:orders:created", "0b6f4a2e-5c1d-4e8f-9a7b-3c2d1e0f9a8b", "6c9e2f0a-1b3d-4c5e-8f7a-9b0c1d2e3f4a", "orders", "go"}
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = buf[:0]
		for _, s := range strs {
			buf = appendJSONString(buf, s)
		}
	}
}
