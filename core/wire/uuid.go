package wire

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
)

// NewID returns a random (version 4, RFC 9562) UUID in its canonical
// lower-case 36-character form, read from crypto/rand. Make uses it for
// meta.id and for a new trace id.
func NewID() string {
	var s [36]byte
	formatUUIDv4(&s, randomUUID())
	return string(s[:])
}

// newIDPair returns two ids as NewID does, sharing one allocation and one
// draw of 32 random bytes.
func newIDPair() (string, string) {
	var s [72]byte
	var u [32]byte
	randomFill(u[:])
	formatUUIDv4((*[36]byte)(s[:36]), [16]byte(u[:16]))
	formatUUIDv4((*[36]byte)(s[36:]), [16]byte(u[16:]))
	both := string(s[:])
	return both[:36], both[36:]
}

// randomUUID returns 16 fresh random bytes.
func randomUUID() (u [16]byte) {
	randomFill(u[:])
	return u
}

// randomFill fills dst (at most a block long) with fresh random bytes
// from a pooled block.
func randomFill(dst []byte) {
	b := randomBlocks.Get().(*randomBlock)
	if len(b.buf)-b.next < len(dst) {
		_, _ = rand.Read(b.buf[:]) // crypto/rand.Read never fails (it aborts the program instead)
		b.next = 0
	}
	used := b.buf[b.next : b.next+len(dst)]
	copy(dst, used)
	clear(used) // a random id is never kept after it was handed out
	b.next += len(dst)
	randomBlocks.Put(b)
}

// randomBlock holds crypto/rand bytes read ahead for 64 ids, so that a
// publish does not pay a getrandom call per id; each 16 bytes serve one id
// only.
type randomBlock struct {
	buf  [64 * 16]byte
	next int
}

var randomBlocks = sync.Pool{New: func() any { return &randomBlock{next: 64 * 16} }}

// formatUUIDv4 stamps the version and variant bits on u and writes it to
// s in canonical form.
func formatUUIDv4(s *[36]byte, u [16]byte) {
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	be := binary.BigEndian
	be.PutUint64(s[0:8], hex8(be.Uint32(u[0:4])))
	s[8] = '-'
	be.PutUint32(s[9:13], uint32(hex8(uint32(be.Uint16(u[4:6])))))
	s[13] = '-'
	be.PutUint32(s[14:18], uint32(hex8(uint32(be.Uint16(u[6:8])))))
	s[18] = '-'
	be.PutUint32(s[19:23], uint32(hex8(uint32(be.Uint16(u[8:10])))))
	s[23] = '-'
	be.PutUint64(s[24:32], hex8(be.Uint32(u[10:14])))
	be.PutUint32(s[32:36], uint32(hex8(uint32(be.Uint16(u[14:16])))))
}

// hex8 returns the 8 lower-case hex digits of v, the first digit in the
// highest byte (so that big-endian stores write them in order); for a v
// below 1<<16 the lower 4 bytes hold its 4 digits.
func hex8(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f // one nibble per byte, in order
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
}
