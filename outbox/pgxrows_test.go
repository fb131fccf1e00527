package outbox

import (
	"encoding/binary"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// claimValues returns the raw values of a claimed row as PostgreSQL sends
// them in the binary format.
func claimValues(id int64, queue string, key []byte, orderKey, body, headers string) [][]byte {
	i8 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	i4 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	tid := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint32(nil, 7), 3)
	return [][]byte{i8(id), []byte(queue), key, []byte(orderKey), []byte(body), []byte(headers), i4(2), tid, i4(5), i8(40), i8(41), {1}}
}

func TestDecodeClaimRow(t *testing.T) {
	var a rowArena
	q := &sameString{}
	var rw row
	vals := claimValues(9, "orders", []byte("k1"), "o1", `{"meta":{}}`, `{"x":"y"}`)
	if err := decodeClaimRow(vals, &rw, &a, q); err != nil {
		t.Fatal(err)
	}
	if rw.id != 9 || rw.queue != "orders" || string(rw.key) != "k1" || rw.orderKey != "o1" || rw.body != `{"meta":{}}` ||
		rw.headers["x"] != "y" || rw.attempts != 2 || rw.bucket != 5 || rw.tid != (pgtype.TID{BlockNumber: 7, OffsetNumber: 3, Valid: true}) {
		t.Fatalf("decoded %+v", rw)
	}
	// The values are copies: pgx reuses its buffer for the next row.
	for _, v := range vals {
		for i := range v {
			v[i] = 'z'
		}
	}
	if string(rw.key) != "k1" || rw.orderKey != "o1" || rw.body != `{"meta":{}}` {
		t.Fatalf("after the buffer changed: %+v", rw)
	}
	var fl claimFloors
	if err := decodeClaimValues(claimValues(1, "q", nil, "o", "b", "null"), &fl); err != nil || fl.xmin != 40 || fl.xid != 41 || !fl.blocked {
		t.Fatalf("statement values %+v (%v)", fl, err)
	}
}

func TestDecodeClaimRowKeys(t *testing.T) {
	var a rowArena
	q := &sameString{}
	var null, empty row
	if err := decodeClaimRow(claimValues(1, "q", nil, "o", "b", "null"), &null, &a, q); err != nil || null.key != nil || null.headers != nil {
		t.Fatalf("a NULL key decoded as %#v, headers %v (%v), want nil", null.key, null.headers, err)
	}
	if err := decodeClaimRow(claimValues(2, "q", []byte{}, "o", "", "null"), &empty, &a, q); err != nil || empty.key == nil || len(empty.key) != 0 || empty.body != "" {
		t.Fatalf("an empty key decoded as %#v, body %q (%v), want empty, not nil", empty.key, empty.body, err)
	}
	// One string for rows of one queue.
	if null.queue != "q" || empty.queue != "q" {
		t.Fatalf("queues %q, %q", null.queue, empty.queue)
	}
	// A key's slice has no room to grow into the next value's bytes.
	var k row
	if err := decodeClaimRow(claimValues(3, "q", []byte("ab"), "o", "b", "null"), &k, &a, q); err != nil || cap(k.key) != 2 {
		t.Fatalf("key cap %d (%v), want 2", cap(k.key), err)
	}
}

func TestDecodeClaimRowRefusesWhatItCannotRead(t *testing.T) {
	var a rowArena
	q := &sameString{}
	var rw row
	short := claimValues(1, "q", nil, "o", "b", "null")
	short[0] = short[0][:4]
	nullBody := claimValues(1, "q", nil, "o", "b", "null")
	nullBody[4] = nil
	badHeaders := claimValues(1, "q", nil, "o", "b", "{")
	for name, vals := range map[string][][]byte{"short id": short, "NULL body": nullBody, "bad headers": badHeaders, "too few": short[:5]} {
		if err := decodeClaimRow(vals, &rw, &a, q); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestRawClaimColumns(t *testing.T) {
	fds := make([]pgconn.FieldDescription, len(claimColumnOIDs))
	for i, oid := range claimColumnOIDs {
		fds[i] = pgconn.FieldDescription{DataTypeOID: oid, Format: pgtype.BinaryFormatCode}
	}
	if !rawClaimColumns(fds) {
		t.Fatal("binary columns refused")
	}
	fds[1].Format = pgtype.TextFormatCode // text in text format: the same bytes
	if !rawClaimColumns(fds) {
		t.Fatal("a text column in the text format refused")
	}
	fds[4].Format = pgtype.TextFormatCode // bytea in text format: hex
	if rawClaimColumns(fds) {
		t.Fatal("a bytea column in the text format accepted")
	}
	fds[4].Format = pgtype.BinaryFormatCode
	fds[6].DataTypeOID = pgtype.Int8OID
	if rawClaimColumns(fds) {
		t.Fatal("a column of another type accepted")
	}
	if rawClaimColumns(fds[:11]) {
		t.Fatal("too few columns accepted")
	}
}
