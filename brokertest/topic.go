package brokertest

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// maxTopicLen keeps names well under Kafka's limit of 249 characters.
const maxTopicLen = 120

// Topic returns a topic name unique to this call: the prefix, the test's
// name and 8 random bytes in hex, joined by '-'. The name uses only
// lower-case letters, digits and '-', so it is valid as a Kafka topic and as
// the local name of a Pulsar topic (persistent://public/default/<name>), and
// it never mixes '.' and '_' (Kafka warns that those collide in metric
// names). An empty prefix becomes "bq". Calling it twice in one test gives
// two different names.
func Topic(t testing.TB, prefix string) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("brokertest: random topic suffix: %v", err)
		return ""
	}
	p := sanitize(prefix)
	if p == "" {
		p = "bq"
	}
	suffix := hex.EncodeToString(b[:])
	name := sanitize(t.Name())
	if room := maxTopicLen - len(p) - len(suffix) - 2; len(name) > room {
		name = strings.Trim(name[:max(room, 0)], "-")
	}
	if name == "" {
		return p + "-" + suffix
	}
	return p + "-" + name + "-" + suffix
}

// sanitize lower-cases s, maps every character outside [a-z0-9] to '-',
// and collapses and trims dashes.
func sanitize(s string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			sb.WriteRune(r)
			dash = false
			continue
		}
		if !dash && sb.Len() > 0 {
			sb.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(sb.String(), "-")
}
