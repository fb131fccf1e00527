package kafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
)

// tapKeys passes request and response through a fetchTap in pieces of
// chunk bytes and returns the record keys it reported.
func tapKeys(t testing.TB, request, response []byte, chunk int) []recordKey {
	t.Helper()
	var got []recordKey
	tapThrough(t, request, response, chunk, nil, func(k recordKey) { got = append(got, k) })
	return got
}

// keyedBatch encodes records at base with the given keys (nil: a null key)
// with kafka-go's record batch encoder.
func keyedBatch(t testing.TB, base int64, attrs protocol.Attributes, keys ...[]byte) []byte {
	t.Helper()
	recs := make([]protocol.Record, len(keys))
	t0 := time.UnixMilli(1_700_000_000_000)
	for i, k := range keys {
		recs[i] = protocol.Record{Offset: base + int64(i), Time: t0, Key: protocol.NewBytes(k), Value: protocol.NewBytes(bytes.Repeat([]byte("v"), 200*i)),
			Headers: []protocol.Header{{Key: "h", Value: []byte("x")}}}
	}
	return writeBatch(t, base, attrs, recs)
}

// TestFetchTapReadsRecordKeyLengths: the key length of every record (null,
// empty, set, a key longer than one varint byte) of uncompressed and
// compressed batches, every non-flexible Fetch version, every piece size;
// a compressed batch cut by the end of the fetch is passed over, an
// uncompressed one yields its whole records.
func TestFetchTapReadsRecordKeyLengths(t *testing.T) {
	keys := [][]byte{nil, {}, []byte("k"), bytes.Repeat([]byte("K"), 300), {}}
	lens := []int64{-1, 0, 1, 300, 0}
	for _, codec := range []compress.Compression{0, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		batch := keyedBatch(t, 20, protocol.Attributes(codec), keys...)
		cut := keyedBatch(t, 25, protocol.Attributes(codec), nil, []byte{}, []byte("k"))
		cutAt := len(cut) - 150 // within the third record's value
		if codec != 0 {
			cutAt = max(len(cut)/2, batchHeaderLen)
		}
		records := append(append([]byte(nil), batch...), cut[:cutAt]...)
		var want []recordKey
		for i, l := range lens {
			want = append(want, recordKey{Topic: "t", Partition: 3, Offset: 20 + int64(i), KeyLen: l})
		}
		if codec == 0 {
			// The cut batch's records before the cut.
			want = append(want, recordKey{Topic: "t", Partition: 3, Offset: 25, KeyLen: -1}, recordKey{Topic: "t", Partition: 3, Offset: 26, KeyLen: 0})
		}
		for v := int16(0); v <= maxScannedFetchVersion; v++ {
			resp := fetchResponse(v, 9, []string{"t"}, [][]fetchPart{{{id: 3, aborted: 1, records: records}}})
			for _, chunk := range chunkSizes {
				got := tapKeys(t, requestFrame(fetchAPIKey, v, 9, 30), resp, chunk)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%v v%d chunk %d (-want +got):\n%s", codec, v, chunk, diff)
				}
			}
		}
	}
}

// TestFetchTapReadsKeysOfCapturedBatches walks the records of the batches
// kafka-go's, franz-go's and librdkafka's encoders wrote (uncompressed,
// then lz4 or zstd), every record keyed "k".
func TestFetchTapReadsKeysOfCapturedBatches(t *testing.T) {
	for name, f := range loadFixtures(t) {
		resp, err := os.ReadFile(filepath.Join("testdata/fetch", name+".v10.bin"))
		if err != nil {
			t.Fatal(err)
		}
		var want []recordKey
		for _, r := range f.Records {
			want = append(want, recordKey{Topic: f.Topic, Offset: r.Offset, KeyLen: 1})
		}
		for _, chunk := range chunkSizes {
			if diff := cmp.Diff(want, tapKeys(t, requestFrame(fetchAPIKey, 10, 7, 40), resp, chunk)); diff != "" {
				t.Fatalf("%s chunk %d (-want +got):\n%s", name, chunk, diff)
			}
		}
	}
}

// TestKeyReaderRestoresEmptyKeys: a record kafka-go returns with a nil key
// gets an empty key when the tap saw one; a null key stays nil; records
// fetched again replace what was seen from their offset on.
func TestKeyReaderRestoresEmptyKeys(t *testing.T) {
	keys := newEmptyKeys("t", 0)
	for _, k := range []recordKey{{Offset: 1, KeyLen: 0}, {Offset: 2, KeyLen: -1}, {Offset: 3, KeyLen: 0}, {Offset: 4, KeyLen: 2},
		{Topic: "t", Partition: 1, Offset: 5, KeyLen: 0}} {
		if k.Topic == "" {
			k.Topic = "t"
		}
		keys.add(k)
	}
	// A reconnection fetches offset 3 again: now with a null key.
	keys.add(recordKey{Topic: "t", Offset: 3, KeyLen: -1})
	keys.add(recordKey{Topic: "t", Offset: 5, KeyLen: 0})
	var msgs []kafkago.Message
	for o := int64(0); o <= 5; o++ {
		m := kafkago.Message{Topic: "t", Offset: o}
		if o == 4 {
			m.Key = []byte("ab")
		}
		msgs = append(msgs, m)
	}
	r := &keyReader{partitionReader: &sliceReader{msgs: msgs}, keys: keys}
	want := map[int64][]byte{0: nil, 1: {}, 2: nil, 3: nil, 4: []byte("ab"), 5: {}}
	for o := int64(0); o <= 5; o++ {
		m, err := r.FetchMessage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if w := want[o]; (m.Key == nil) != (w == nil) || !bytes.Equal(m.Key, w) {
			t.Errorf("offset %d key %#v, want %#v", o, m.Key, w)
		}
	}
	if len(keys.offsets) != 0 {
		t.Errorf("looked-up offsets kept: %v", keys.offsets)
	}
}

func TestRecordKeyOfRejectsWhatIsNotARecordPrefix(t *testing.T) {
	for _, b := range [][]byte{nil, {0}, {0, 0x80}, {0, 0, 1}, {0, 0, 0, 3}, {0, 0, 2}, {0, 0, 2, 5}} {
		if _, _, ok := recordKeyOf(b); ok {
			t.Errorf("recordKeyOf(%v) ok", b)
		}
	}
	if d, k, ok := recordKeyOf([]byte{0, 0, 4, 1}); !ok || d != 2 || k != -1 {
		t.Errorf("recordKeyOf = %d %d %v", d, k, ok)
	}
}

// FuzzFetchTapKeys passes arbitrary response bytes through a fetchTap that
// reads record keys: it must never panic, and report the same keys
// whatever pieces the bytes arrive in. The seeds are the captured
// responses of testdata/fetch and synthetic batches of every codec.
func FuzzFetchTapKeys(f *testing.F) {
	names, _ := filepath.Glob("testdata/fetch/*.bin")
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b, int16(10), uint8(3))
		}
	}
	for _, codec := range []compress.Compression{0, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		batch := keyedBatch(f, 0, protocol.Attributes(codec), nil, []byte{}, []byte("k"))
		f.Add(fetchResponse(10, 7, []string{"t"}, [][]fetchPart{{{id: 0, records: batch}}}), int16(10), uint8(5))
	}
	f.Fuzz(func(t *testing.T, resp []byte, version int16, chunk uint8) {
		req := requestFrame(fetchAPIKey, version, 7, 0)
		whole := tapKeys(t, req, resp, 1<<20)
		pieces := tapKeys(t, req, resp, int(chunk)+1)
		if !cmp.Equal(whole, pieces) {
			t.Fatalf("keys depend on how the bytes arrive:\nwhole %+v\npieces of %d %+v", whole, int(chunk)+1, pieces)
		}
		for _, k := range whole {
			if k.KeyLen < -1 || k.Offset < 0 {
				t.Fatalf("record key %+v", k)
			}
		}
	})
}

// BenchmarkFetchTapKeys reads a 1 MiB Fetch response (batches of 10 keyed
// records of 1 KiB of random bytes, uncompressed and lz4) through a fetchTap reading every
// record's key length, and straight from the connection.
func BenchmarkFetchTapKeys(b *testing.B) {
	for _, codec := range []compress.Compression{0, compress.Lz4} {
		record := func(offset int64) protocol.Record {
			value := make([]byte, 1024)
			_, _ = rand.Read(value) // as little compressible as a real payload can be
			return protocol.Record{Offset: offset, Key: protocol.NewBytes([]byte("order-42")), Value: protocol.NewBytes(value)}
		}
		benchFetchTap(b, codec.String()+"/", codec, record, "record key", func(c net.Conn, seen *int) *fetchTap {
			return newFetchTap(c, nil, func(recordKey) { *seen++ })
		})
	}
}
