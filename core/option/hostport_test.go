package option

import (
	"net"
	"strconv"
	"testing"
)

func TestHostPort(t *testing.T) {
	for s, ok := range map[string]bool{
		"127.0.0.1:9092":   true,
		"localhost:1":      true,
		"broker-1:65535":   true,
		"b_2.example:9093": true,
		"[::1]:9092":       true,
		"[fe80::1]:6650":   true,

		"":                              false,
		"127.0.0.1":                     false,
		"127.0.0.1:9092,127.0.0.1:9093": false, // a list is not one address
		"kafka://127.0.0.1:9092":        false,
		":9092":                         false,
		"host:":                         false,
		"host:0":                        false,
		"host:65536":                    false,
		"host:+80":                      false,
		"host:0x50":                     false,
		"host:909 2":                    false,
		"::1:9092":                      false,
		"[127.0.0.1]:9092":              false,
		"[fe80::1%eth0]:9092":           false,
		"-host:9092":                    false,
		".host:9092":                    false,
		"ho st:9092":                    false,
		"hôst:9092":                     false,
		"host/path:9092":                false,
	} {
		if err := HostPort(s); (err == nil) != ok {
			t.Errorf("HostPort(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

// FuzzHostPort: whatever HostPort accepts splits into a host and a port
// from 1 to 65535 and holds no list separator.
func FuzzHostPort(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9092", "[::1]:9092", "a:1,b:2", "kafka://h:1", "h:99999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if HostPort(s) != nil {
			return
		}
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			t.Fatalf("accepted %q: host %q, %v", s, host, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			t.Fatalf("accepted %q: port %q", s, port)
		}
		for _, c := range []byte(s) {
			if c == ',' || c == ';' || c == ' ' || c == '/' {
				t.Fatalf("accepted %q holding %q", s, c)
			}
		}
	})
}
