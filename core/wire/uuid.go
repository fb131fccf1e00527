package wire

import "crypto/rand"

// NewID returns a random (version 4, RFC 9562) UUID in its canonical
// lower-case 36-character form, read from crypto/rand. Make uses it for
// meta.id and for a new trace id.
func NewID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (it aborts the program instead)
	return formatUUIDv4(u)
}

// formatUUIDv4 stamps the version and variant bits on u and formats it.
func formatUUIDv4(u [16]byte) string {
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hexDigits[c>>4], hexDigits[c&0xf]
		j += 2
	}
	return string(s[:])
}
