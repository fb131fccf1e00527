package kafka

import (
	"crypto/tls"
	"testing"
)

func TestSecurityOptionsReachEveryConnection(t *testing.T) {
	cfg := &tls.Config{ServerName: "kafka.internal", MinVersion: tls.VersionTLS12}
	cases := []struct {
		name string
		opt  Option
		mech string
	}{
		{"plain", WithSASLPlain("u", "p"), "PLAIN"},
		{"scram-256", WithSASLSCRAM(SCRAMSHA256, "u", "p"), "SCRAM-SHA-256"},
		{"scram-512", WithSASLSCRAM(SCRAMSHA512, "u", "p"), "SCRAM-SHA-512"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := New(WithBrokers("127.0.0.1:1"), WithTLS(cfg), c.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if tr.net.TLS != cfg || tr.dialer.TLS != cfg {
				t.Fatal("TLS config not set on the writer transport and the dialer")
			}
			if tr.net.SASL == nil || tr.net.SASL.Name() != c.mech || tr.dialer.SASLMechanism.Name() != c.mech {
				t.Fatalf("SASL mechanism %v / %v, want %s", tr.net.SASL, tr.dialer.SASLMechanism, c.mech)
			}
			if m, ok := tr.ownWriter.Transport.(*metadataMemo); !ok || m.next != tr.net {
				t.Fatal("the writer does not use the secured transport")
			}
		})
	}
}
