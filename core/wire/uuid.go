package wire

import (
	"crypto/rand"
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

// newIDPair returns two ids as NewID does, sharing one allocation.
func newIDPair() (string, string) {
	var s [72]byte
	formatUUIDv4((*[36]byte)(s[:36]), randomUUID())
	formatUUIDv4((*[36]byte)(s[36:]), randomUUID())
	both := string(s[:])
	return both[:36], both[36:]
}

// randomUUID returns 16 fresh random bytes.
func randomUUID() [16]byte {
	b := randomBlocks.Get().(*randomBlock)
	if b.next == len(b.buf) {
		_, _ = rand.Read(b.buf[:]) // crypto/rand.Read never fails (it aborts the program instead)
		b.next = 0
	}
	var u [16]byte
	copy(u[:], b.buf[b.next:])
	clear(b.buf[b.next : b.next+16]) // a random id is never kept after it was handed out
	b.next += 16
	randomBlocks.Put(b)
	return u
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
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hexDigits[c>>4], hexDigits[c&0xf]
		j += 2
	}
}
