package outbox

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The rows of a claim through pgx are read from their raw values when
// every column comes in the format rawClaimColumns expects: a handful of
// byte reads per row in place of a scan plan per column, and the row's
// key, order key and body copied into one buffer per claim (rowArena)
// in place of three allocations. Any other layout goes through pgx's
// Scan (scanPgxRows).

// claimColumnOIDs are the types of the columns the claim's statement
// returns through pgx, in order: id, queue, msg_key, order_key, body,
// headers, attempts, ctid, bucket, then the statement's own xmin, xid and
// whether a failed row waits.
var claimColumnOIDs = [...]uint32{
	pgtype.Int8OID, pgtype.TextOID, pgtype.ByteaOID, pgtype.TextOID, pgtype.ByteaOID, pgtype.TextOID,
	pgtype.Int4OID, pgtype.TIDOID, pgtype.Int4OID, pgtype.Int8OID, pgtype.Int8OID, pgtype.BoolOID,
}

// rawClaimColumns reports whether fds are the claim's columns, each in
// the binary format (a text column in either: its bytes are the same).
func rawClaimColumns(fds []pgconn.FieldDescription) bool {
	if len(fds) != len(claimColumnOIDs) {
		return false
	}
	for i, fd := range fds {
		if fd.DataTypeOID != claimColumnOIDs[i] || (fd.Format != pgtype.BinaryFormatCode && fd.DataTypeOID != pgtype.TextOID) {
			return false
		}
	}
	return true
}

// rowArenaChunk is the size of a rowArena's buffers: a claim of 500 rows
// of a few hundred bytes each fills about ten, and leaves at most one
// partly empty.
const rowArenaChunk = 16 << 10

// rowArena holds copies of the variable-length values of one claim's
// rows, appended to a buffer that is replaced, not grown, when full: the
// strings and slices handed out stay valid (and keep their buffer alive)
// for as long as a row holds them.
type rowArena struct{ buf []byte }

// bytes returns a copy of v: nil for nil (a NULL), empty for empty.
func (a *rowArena) bytes(v []byte) []byte {
	if v == nil {
		return nil
	}
	if len(v) == 0 {
		return []byte{}
	}
	if len(a.buf)+len(v) > cap(a.buf) {
		a.buf = make([]byte, 0, max(rowArenaChunk, len(v)))
	}
	off := len(a.buf)
	a.buf = append(a.buf, v...)
	return a.buf[off:len(a.buf):len(a.buf)]
}

// string returns a copy of v as a string.
func (a *rowArena) string(v []byte) string {
	b := a.bytes(v)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// decodeClaimRow decodes into rw one row of the claim's statement, its
// columns as rawClaimColumns accepts them; queue keeps the last queue
// name, so that rows of one queue share one string.
func decodeClaimRow(vals [][]byte, rw *row, a *rowArena, queue *sameString) error {
	if len(vals) != len(claimColumnOIDs) {
		return fmt.Errorf("%d columns, want %d", len(vals), len(claimColumnOIDs))
	}
	id, ok := int8At(vals[0])
	if !ok {
		return fmt.Errorf("id: %d bytes", len(vals[0]))
	}
	attempts, ok1 := int4At(vals[6])
	bucket, ok2 := int4At(vals[8])
	tid := vals[7]
	if !ok1 || !ok2 || len(tid) != 6 || vals[1] == nil || vals[3] == nil || vals[4] == nil || vals[5] == nil {
		return fmt.Errorf("row %d: a column is NULL or of an unexpected size", id)
	}
	if string(vals[1]) != queue.s {
		queue.s = string(vals[1])
	}
	*rw = row{
		id:       id,
		queue:    queue.s,
		key:      a.bytes(vals[2]),
		orderKey: a.string(vals[3]),
		body:     a.string(vals[4]),
		attempts: int(attempts),
		tid:      pgtype.TID{BlockNumber: binary.BigEndian.Uint32(tid), OffsetNumber: binary.BigEndian.Uint16(tid[4:]), Valid: true},
		bucket:   bucket,
	}
	// Write stores nil headers as "null", the common case: no decode.
	if h := vals[5]; string(h) != "null" {
		if err := json.Unmarshal(h, &rw.headers); err != nil {
			return fmt.Errorf("row %d: headers: %w", id, err)
		}
	}
	return nil
}

// decodeClaimValues decodes the statement's own values, the same in every
// row, from the last three columns of one.
func decodeClaimValues(vals [][]byte, fl *claimFloors) error {
	xmin, ok1 := int8At(vals[9])
	xid, ok2 := int8At(vals[10])
	if !ok1 || !ok2 || len(vals[11]) != 1 {
		return fmt.Errorf("the snapshot's xmin, the transaction id or the failed-row flag is NULL or of an unexpected size")
	}
	fl.xmin, fl.xid, fl.blocked = xmin, xid, vals[11][0] != 0
	return nil
}

func int8At(v []byte) (int64, bool) {
	if len(v) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v)), true
}

func int4At(v []byte) (int32, bool) {
	if len(v) != 4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(v)), true
}
