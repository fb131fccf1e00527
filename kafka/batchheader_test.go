package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
)

// fixture is a testdata/fetch/<name>.json: the records of a captured
// Fetch response as a confluent-kafka consumer saw them.
type fixture struct {
	Producer      string  `json:"producer"`
	Topic         string  `json:"topic"`
	TimestampType string  `json:"message.timestamp.type"`
	ProducerTS    int64   `json:"producer_timestamp_ms"`
	FetchVersions []int16 `json:"fetch_versions"`
	Records       []struct {
		Offset        int64  `json:"offset"`
		Value         string `json:"value"`
		TimestampType string `json:"timestamp_type"`
		Timestamp     int64  `json:"timestamp"`
	} `json:"records"`
}

func loadFixtures(t testing.TB) map[string]fixture {
	t.Helper()
	names, err := filepath.Glob("testdata/fetch/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures in testdata/fetch: %v", err)
	}
	out := make(map[string]fixture)
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var f fixture
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[strings.TrimSuffix(filepath.Base(n), ".json")] = f
	}
	return out
}

// scriptConn is a net.Conn that serves its response in reads of at most
// chunk bytes and swallows what is written.
type scriptConn struct {
	net.Conn
	r     *bytes.Reader
	chunk int
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(p) > c.chunk {
		p = p[:c.chunk]
	}
	return c.r.Read(p)
}

func (c *scriptConn) Write(p []byte) (int, error) { return len(p), nil }

// requestFrame is the start of a request frame of apiKey: size, api key,
// version and correlation id (a body of bodyLen bytes follows).
func requestFrame(apiKey, version int16, corr int32, bodyLen int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+bodyLen))
	b = binary.BigEndian.AppendUint16(b, uint16(apiKey))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(b, make([]byte, bodyLen)...)
}

// tapAll passes request (written in writes of chunk bytes) and response
// (read in reads of chunk bytes) through a fetchTap and returns the batch
// headers it reported.
func tapAll(t testing.TB, request, response []byte, chunk int) []batchHeader {
	t.Helper()
	var got []batchHeader
	tapThrough(t, request, response, chunk, func(h batchHeader) { got = append(got, h) }, nil)
	return got
}

// tapThrough writes request to a fetchTap made with onBatch and onRecord in
// pieces of chunk bytes, then reads response through it (in reads of chunk
// bytes) to the end.
func tapThrough(t testing.TB, request, response []byte, chunk int, onBatch func(batchHeader), onRecord func(recordKey)) {
	t.Helper()
	tap := newFetchTap(&scriptConn{r: bytes.NewReader(response), chunk: chunk}, onBatch, onRecord)
	for p := request; len(p) > 0; {
		n := min(chunk, len(p))
		if _, err := tap.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	buf := make([]byte, 4096)
	for {
		if _, err := tap.Read(buf); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

var chunkSizes = []int{1, 3, 7, 43, 61, 512, 1 << 20}

// TestFetchTapReadsCapturedFetchResponses reads Fetch responses a real
// broker sent for batches written by kafka-go's, franz-go's and
// librdkafka's encoders (testdata/fetch/README.md) and checks every
// record's timestamp type and append time against what a confluent-kafka
// consumer reported for it, whatever pieces the bytes arrive in.
func TestFetchTapReadsCapturedFetchResponses(t *testing.T) {
	for name, f := range loadFixtures(t) {
		for _, v := range f.FetchVersions {
			resp, err := os.ReadFile(filepath.Join("testdata/fetch", name+".v"+strconv.Itoa(int(v))+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			for _, chunk := range chunkSizes {
				headers := tapAll(t, requestFrame(fetchAPIKey, v, 7, 40), resp, chunk)
				if len(headers) != 2 {
					t.Fatalf("%s v%d chunk %d: %d batch headers, want 2 (one per batch written): %+v", name, v, chunk, len(headers), headers)
				}
				log := newBatchLog(f.Topic, 0)
				for _, h := range headers {
					log.add(h)
				}
				for _, r := range f.Records {
					h, ok := log.lookup(r.Offset)
					if !ok {
						t.Fatalf("%s v%d chunk %d: no batch header for offset %d", name, v, chunk, r.Offset)
					}
					if got := h.LogAppendTime; got != (r.TimestampType == "LogAppendTime") {
						t.Fatalf("%s v%d: offset %d LogAppendTime=%v, consumer saw %s", name, v, r.Offset, got, r.TimestampType)
					}
					if h.LogAppendTime && h.MaxTimestamp != r.Timestamp {
						t.Fatalf("%s v%d: offset %d append time %d, consumer saw %d", name, v, r.Offset, h.MaxTimestamp, r.Timestamp)
					}
					if h.LogAppendTime && r.Timestamp-f.ProducerTS < int64(time.Hour/time.Millisecond)-int64(time.Minute/time.Millisecond) {
						t.Fatalf("%s: append time %d not an hour after the producer's %d: the fixture proves nothing", name, r.Timestamp, f.ProducerTS)
					}
				}
			}
		}
	}
}

// TestAppendTimeReaderStampsCapturedBatches checks the records of the
// captured responses as the re-injector's worker sees them: kafka-go's own
// timestamp (the producer's, an hour old) on CreateTime, the append time
// on LogAppendTime.
func TestAppendTimeReaderStampsCapturedBatches(t *testing.T) {
	for name, f := range loadFixtures(t) {
		resp, err := os.ReadFile(filepath.Join("testdata/fetch", name+".v10.bin"))
		if err != nil {
			t.Fatal(err)
		}
		log := newBatchLog(f.Topic, 0)
		for _, h := range tapAll(t, requestFrame(fetchAPIKey, 10, 7, 40), resp, 1<<20) {
			log.add(h)
		}
		var msgs []kafkago.Message
		for _, r := range f.Records {
			// kafka-go's Time: the producer's timestamp (base + delta).
			msgs = append(msgs, kafkago.Message{Topic: f.Topic, Offset: r.Offset, Time: time.UnixMilli(f.ProducerTS)})
		}
		rd := &appendTimeReader{partitionReader: &sliceReader{msgs: msgs}, batches: log, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		for _, r := range f.Records {
			m, err := rd.FetchMessage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := time.UnixMilli(f.ProducerTS)
			if r.TimestampType == "LogAppendTime" {
				want = time.UnixMilli(r.Timestamp)
			}
			if !m.Time.Equal(want) {
				t.Fatalf("%s offset %d: Time %v, want %v (%s)", name, r.Offset, m.Time, want, r.TimestampType)
			}
		}
	}
}

// sliceReader is a partitionReader serving msgs.
type sliceReader struct{ msgs []kafkago.Message }

func (r *sliceReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	if len(r.msgs) == 0 {
		return kafkago.Message{}, io.EOF
	}
	m := r.msgs[0]
	r.msgs = r.msgs[1:]
	return m, nil
}

func (r *sliceReader) Close() error { return nil }

// encodeBatch encodes records with kafka-go's own record batch encoder.
func encodeBatch(t testing.TB, base int64, attrs protocol.Attributes, times ...time.Time) []byte {
	t.Helper()
	recs := make([]protocol.Record, len(times))
	for i, ts := range times {
		recs[i] = protocol.Record{Offset: base + int64(i), Time: ts, Key: protocol.NewBytes([]byte("k")), Value: protocol.NewBytes([]byte("v"))}
	}
	return writeBatch(t, base, attrs, recs)
}

// writeBatch encodes recs as one record batch at base with kafka-go's own
// record batch encoder.
func writeBatch(t testing.TB, base int64, attrs protocol.Attributes, recs []protocol.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	rs := protocol.RecordSet{Version: 2, Attributes: attrs, Records: protocol.NewRecordReader(recs...)}
	if _, err := rs.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	// RecordSet.WriteTo prefixes the set with its int32 size, and writes
	// base offset 0 as a producer does: the broker assigns offsets.
	b := buf.Bytes()[4:]
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}

// fetchPart is one partition of a synthetic Fetch response.
type fetchPart struct {
	id      int32
	aborted int // aborted transactions listed
	records []byte
	null    bool // a null records field
}

// fetchResponse builds a Fetch response frame of version (correlation id
// corr) with topics in order.
func fetchResponse(version int16, corr int32, topics []string, parts [][]fetchPart) []byte {
	var b []byte
	be32 := func(v int32) { b = binary.BigEndian.AppendUint32(b, uint32(v)) }
	be64 := func(v int64) { b = binary.BigEndian.AppendUint64(b, uint64(v)) }
	be32(corr)
	if version >= 1 {
		be32(0) // throttle
	}
	if version >= 7 {
		b = append(b, 0, 0) // error_code
		be32(0)             // session_id
	}
	be32(int32(len(topics)))
	for i, tp := range topics {
		b = binary.BigEndian.AppendUint16(b, uint16(len(tp)))
		b = append(b, tp...)
		be32(int32(len(parts[i])))
		for _, p := range parts[i] {
			be32(p.id)
			b = append(b, 0, 0)
			be64(100) // high watermark
			if version >= 4 {
				be64(100) // last stable offset
			}
			if version >= 5 {
				be64(0) // log start offset
			}
			if version >= 4 {
				if p.aborted == 0 {
					be32(-1)
				} else {
					be32(int32(p.aborted))
					for j := 0; j < p.aborted; j++ {
						be64(int64(j))
						be64(int64(j))
					}
				}
			}
			if version >= 11 {
				be32(-1) // preferred read replica
			}
			if p.null {
				be32(-1)
				continue
			}
			be32(int32(len(p.records)))
			b = append(b, p.records...)
		}
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// TestFetchScannerReadsEveryFetchVersionOfKafkaGoBatches encodes batches
// with kafka-go's encoder (CreateTime and, attribute bit 3 set as a broker
// sets it, LogAppendTime; lz4 compressed too) and reads them from Fetch
// responses of every non-flexible version, over two topics, several
// partitions, aborted transactions, null and empty record sets and a batch
// cut by the end of the fetch.
func TestFetchScannerReadsEveryFetchVersionOfKafkaGoBatches(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	ct := encodeBatch(t, 10, 0, t0, t0.Add(time.Millisecond), t0.Add(5*time.Millisecond))
	lat := encodeBatch(t, 13, protocol.Attributes(timestampTypeBit)|protocol.Attributes(compress.Lz4), t0.Add(time.Second), t0.Add(2*time.Second))
	// A broker stamps a LogAppendTime batch's maxTimestamp with its clock.
	binary.BigEndian.PutUint64(lat[35:], uint64(t0.Add(time.Hour).UnixMilli()))
	cut := encodeBatch(t, 15, 0, t0)
	records := append(append(append([]byte(nil), ct...), lat...), cut[:30]...)
	want := []batchHeader{
		{Topic: "a", Partition: 2, BaseOffset: 10, LastOffset: 12, MaxTimestamp: t0.Add(5 * time.Millisecond).UnixMilli()},
		{Topic: "a", Partition: 2, BaseOffset: 13, LastOffset: 14, LogAppendTime: true, MaxTimestamp: t0.Add(time.Hour).UnixMilli()},
		{Topic: "bb", Partition: 0, BaseOffset: 13, LastOffset: 14, LogAppendTime: true, MaxTimestamp: t0.Add(time.Hour).UnixMilli()},
	}
	for v := int16(0); v <= maxScannedFetchVersion; v++ {
		resp := fetchResponse(v, 42, []string{"a", "bb"}, [][]fetchPart{
			{{id: 1, null: true}, {id: 2, aborted: 2, records: records}, {id: 3}},
			{{id: 0, records: append(append([]byte(nil), lat...), 0, 0, 0)}},
		})
		for _, chunk := range chunkSizes {
			got := tapAll(t, requestFrame(fetchAPIKey, v, 42, 30), resp, chunk)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("v%d chunk %d (-want +got):\n%s", v, chunk, diff)
			}
		}
	}
}

// TestFetchTapFollowsOnlyFetchResponses checks the framing: a response is
// read only when its correlation id is that of a Fetch request of a
// version the scanner knows, other frames are passed over, and a frame
// whose size cannot hold its header stops the reading without a panic.
func TestFetchTapFollowsOnlyFetchResponses(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	lat := encodeBatch(t, 0, protocol.Attributes(timestampTypeBit), t0)
	body := func(corr int32) []byte {
		return fetchResponse(10, corr, []string{"t"}, [][]fetchPart{{{id: 0, records: lat}}})
	}
	want := []batchHeader{{Topic: "t", BaseOffset: 0, LastOffset: 0, LogAppendTime: true, MaxTimestamp: t0.UnixMilli()}}
	cases := []struct {
		name      string
		req, resp []byte
		want      []batchHeader
	}{
		{"fetch", requestFrame(fetchAPIKey, 10, 5, 12), body(5), want},
		{"metadata then fetch, answered in order", append(requestFrame(3, 9, 4, 3), requestFrame(fetchAPIKey, 10, 5, 0)...),
			append(append(binary.BigEndian.AppendUint32(nil, 6), 0, 0, 0, 4, 9, 9), body(5)...), want},
		{"answer to another request", requestFrame(3, 10, 5, 12), body(5), nil},
		{"unknown correlation id", requestFrame(fetchAPIKey, 10, 5, 12), body(6), nil},
		{"flexible version", requestFrame(fetchAPIKey, 12, 5, 12), body(5), nil},
		{"frame too short", requestFrame(fetchAPIKey, 10, 5, 12), append([]byte{0, 0, 0, 2, 0, 0}, body(5)...), nil},
		{"negative frame size", requestFrame(fetchAPIKey, 10, 5, 12), append([]byte{0xff, 0xff, 0xff, 0xff}, body(5)...), nil},
		{"answered twice", requestFrame(fetchAPIKey, 10, 5, 12), append(body(5), body(5)...), want},
	}
	for _, c := range cases {
		for _, chunk := range chunkSizes {
			got := tapAll(t, c.req, c.resp, chunk)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("%s, chunk %d (-want +got):\n%s", c.name, chunk, diff)
			}
		}
	}
}

func TestBatchHeaderOfRejectsWhatIsNotAV2Header(t *testing.T) {
	good := encodeBatch(t, 7, 0, time.UnixMilli(1))
	if h, err := batchHeaderOf(good); err != nil || h.BaseOffset != 7 || h.LastOffset != 7 {
		t.Fatalf("batchHeaderOf(kafka-go batch) = %+v, %v", h, err)
	}
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"short":           good[:batchHeaderLen-1],
		"magic 1":         mutate(func(b []byte) { b[16] = 1 }),
		"length too low":  mutate(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 30) }),
		"negative delta":  mutate(func(b []byte) { binary.BigEndian.PutUint32(b[23:], 0xffffffff) }),
		"negative offset": mutate(func(b []byte) { b[0] = 0x80 }),
		"offset overflow": mutate(func(b []byte) {
			binary.BigEndian.PutUint64(b, 1<<63-1)
			binary.BigEndian.PutUint32(b[23:], 5)
		}),
	} {
		if h, err := batchHeaderOf(b); !errors.Is(err, errBatchHeader) {
			t.Errorf("%s: batchHeaderOf = %+v, %v; want errBatchHeader", name, h, err)
		}
	}
}

func TestBatchLogFindsTheBatchOfAnOffsetInOrder(t *testing.T) {
	l := newBatchLog("t", 1)
	l.add(batchHeader{Topic: "t", Partition: 1, BaseOffset: 0, LastOffset: 4, MaxTimestamp: 1})
	l.add(batchHeader{Topic: "t", Partition: 1, BaseOffset: 8, LastOffset: 9, LogAppendTime: true, MaxTimestamp: 2}) // 5-7 compacted away
	l.add(batchHeader{Topic: "t", Partition: 2, BaseOffset: 10, LastOffset: 20, MaxTimestamp: 9})                    // another partition
	l.add(batchHeader{Topic: "u", Partition: 1, BaseOffset: 10, LastOffset: 20, MaxTimestamp: 9})                    // another topic
	for _, c := range []struct {
		offset int64
		ok     bool
		ts     int64
	}{{0, true, 1}, {4, true, 1}, {6, false, 0}, {8, true, 2}, {9, true, 2}, {10, false, 0}} {
		h, ok := l.lookup(c.offset)
		if ok != c.ok || h.MaxTimestamp != c.ts {
			t.Fatalf("lookup(%d) = %+v, %v; want ok=%v maxTimestamp %d", c.offset, h, ok, c.ok, c.ts)
		}
	}
	if _, ok := l.lookup(0); ok {
		t.Fatal("a batch before a looked-up offset is kept")
	}
	// A reader that fetches again from an earlier offset reads the batches
	// again: the later copy replaces what the log held.
	l.add(batchHeader{Topic: "t", Partition: 1, BaseOffset: 10, LastOffset: 12, MaxTimestamp: 3})
	l.add(batchHeader{Topic: "t", Partition: 1, BaseOffset: 13, LastOffset: 13, MaxTimestamp: 4})
	l.add(batchHeader{Topic: "t", Partition: 1, BaseOffset: 10, LastOffset: 12, LogAppendTime: true, MaxTimestamp: 5})
	if h, ok := l.lookup(11); !ok || h.MaxTimestamp != 5 || !h.LogAppendTime {
		t.Fatalf("lookup(11) after a refetch = %+v, %v", h, ok)
	}
	if _, ok := l.lookup(13); ok {
		t.Fatal("a batch past a refetched one is kept: it will be read again")
	}
	for i := range int64(maxBatchLog + 10) {
		l.add(batchHeader{Topic: "t", Partition: 1, BaseOffset: 100 + i, LastOffset: 100 + i})
	}
	if n := len(l.batches); n > maxBatchLog {
		t.Fatalf("batch log holds %d headers, bound %d", n, maxBatchLog)
	}
}

func TestAppendTimeReaderKeepsTheRecordTimeWithoutItsBatchHeader(t *testing.T) {
	var logged bytes.Buffer
	own := time.UnixMilli(1_000)
	rd := &appendTimeReader{partitionReader: &sliceReader{msgs: []kafkago.Message{{Offset: 3, Time: own}, {Offset: 4, Time: own}}},
		batches: newBatchLog("t", 0), log: slog.New(slog.NewTextHandler(&logged, nil))}
	for range 2 {
		m, err := rd.FetchMessage(context.Background())
		if err != nil || !m.Time.Equal(own) {
			t.Fatalf("FetchMessage = %v, %v; want the record's own time", m.Time, err)
		}
	}
	if n := strings.Count(logged.String(), "did not see the record's batch header"); n != 1 {
		t.Fatalf("logged %d warnings, want 1:\n%s", n, logged.String())
	}
	if _, err := rd.FetchMessage(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("FetchMessage past the end = %v, want the reader's error", err)
	}
}

// FuzzFetchTap passes arbitrary response bytes through a fetchTap that
// expects a Fetch response of version: it must never panic, report only
// ordered offsets, and report the same headers whatever pieces the bytes
// arrive in. The seed corpus (testdata/fuzz/FuzzFetchTap) holds the
// captured responses of testdata/fetch, whole and cut.
func FuzzFetchTap(f *testing.F) {
	f.Add([]byte{}, int16(10), uint8(1))
	f.Fuzz(func(t *testing.T, resp []byte, version int16, chunk uint8) {
		req := requestFrame(fetchAPIKey, version, 7, 0)
		whole := tapAll(t, req, resp, 1<<20)
		pieces := tapAll(t, req, resp, int(chunk)+1)
		if !cmp.Equal(whole, pieces) {
			t.Fatalf("headers depend on how the bytes arrive:\nwhole %+v\npieces of %d %+v", whole, int(chunk)+1, pieces)
		}
		for _, h := range whole {
			if h.LastOffset < h.BaseOffset || h.BaseOffset < 0 {
				t.Fatalf("header with offsets %d..%d", h.BaseOffset, h.LastOffset)
			}
		}
	})
}

// BenchmarkFetchTap reads a 1 MiB Fetch response (kafka-go batches of 10
// records of 1 KiB) in 4 KiB reads, as kafka-go's bufio reader does,
// through a fetchTap and straight from the connection.
func BenchmarkFetchTap(b *testing.B) {
	t0 := time.UnixMilli(1_700_000_000_000)
	record := func(offset int64) protocol.Record {
		return protocol.Record{Offset: offset, Time: t0, Value: protocol.NewBytes(make([]byte, 1024))}
	}
	benchFetchTap(b, "", 0, record, "batch header", func(c net.Conn, seen *int) *fetchTap {
		return newFetchTap(c, func(batchHeader) { *seen++ }, nil)
	})
}

// benchFetchTap builds a fetch response of about 1 MiB of batches of ten
// records made by record, compressed with codec, and runs prefix+"raw"
// (reading it) and prefix+"tapped" (reading it through tap). The tapped
// run fails when tap never counted a sighting of what.
func benchFetchTap(b *testing.B, prefix string, codec compress.Compression, record func(offset int64) protocol.Record, what string, tap func(c net.Conn, seen *int) *fetchTap) {
	var records []byte
	for base := int64(0); len(records) < 1<<20; base += 10 {
		recs := make([]protocol.Record, 10)
		for i := range recs {
			recs[i] = record(base + int64(i))
		}
		var rb bytes.Buffer
		if _, err := (&protocol.RecordSet{Version: 2, Attributes: protocol.Attributes(codec), Records: protocol.NewRecordReader(recs...)}).WriteTo(&rb); err != nil {
			b.Fatal(err)
		}
		batch := rb.Bytes()[4:]
		binary.BigEndian.PutUint64(batch, uint64(base))
		records = append(records, batch...)
	}
	resp := fetchResponse(10, 7, []string{"t"}, [][]fetchPart{{{id: 0, records: records}}})
	req := requestFrame(fetchAPIKey, 10, 7, 0)
	buf := make([]byte, 4096)
	read := func(b *testing.B, c net.Conn) {
		for {
			if _, err := c.Read(buf); errors.Is(err, io.EOF) {
				return
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run(prefix+"raw", func(b *testing.B) {
		b.SetBytes(int64(len(resp)))
		for b.Loop() {
			read(b, &scriptConn{r: bytes.NewReader(resp), chunk: 1 << 20})
		}
	})
	b.Run(prefix+"tapped", func(b *testing.B) {
		b.SetBytes(int64(len(resp)))
		seen := 0
		for b.Loop() {
			t := tap(&scriptConn{r: bytes.NewReader(resp), chunk: 1 << 20}, &seen)
			if _, err := t.Write(req); err != nil {
				b.Fatal(err)
			}
			read(b, t)
		}
		if seen == 0 {
			b.Fatal("no " + what + " read")
		}
	})
}
