package brokertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeCA writes a self-signed CA certificate as PEM and returns its path.
func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func setAllSecure(t *testing.T) (kafkaCA, pulsarCA string) {
	t.Helper()
	setAll(t)
	kafkaCA, pulsarCA = writeCA(t), writeCA(t)
	t.Setenv(EnvKafkaTLSBrokers, "127.0.0.1:19095")
	t.Setenv(EnvKafkaSASLTLSBrokers, "127.0.0.1:19096")
	t.Setenv(EnvKafkaTLSCA, kafkaCA)
	t.Setenv(EnvPulsarTLSURL, "pulsar+ssl://127.0.0.1:16651")
	t.Setenv(EnvPulsarTLSCA, pulsarCA)
	t.Setenv(EnvPulsarToken, "a.b.c")
	return kafkaCA, pulsarCA
}

func TestSecureAllSet(t *testing.T) {
	kafkaCA, pulsarCA := setAllSecure(t)
	var tlsBrokers, saslTLSBrokers []string
	var kca, kca2, user, pass, purl, pca, token string
	f := run("T", func(tb testing.TB) {
		tlsBrokers, kca = KafkaTLS(tb)
		saslTLSBrokers, user, pass, kca2 = KafkaSASLTLS(tb)
		purl, pca = PulsarTLS(tb)
		token = PulsarToken(tb)
		if cfg := TLSConfig(tb, kca); cfg == nil || cfg.RootCAs == nil || cfg.InsecureSkipVerify {
			tb.Fatalf("TLSConfig = %+v", cfg)
		}
	})
	if f.ended() {
		t.Fatalf("ended the test: fatal=%q skip=%q", f.fatal, f.skip)
	}
	if !reflect.DeepEqual(tlsBrokers, []string{"127.0.0.1:19095"}) || kca != kafkaCA {
		t.Errorf("KafkaTLS = %q, %q", tlsBrokers, kca)
	}
	if !reflect.DeepEqual(saslTLSBrokers, []string{"127.0.0.1:19096"}) || user != "bq" || pass != "pw" || kca2 != kafkaCA {
		t.Errorf("KafkaSASLTLS = %q, %q, %q, %q", saslTLSBrokers, user, pass, kca2)
	}
	if purl != "pulsar+ssl://127.0.0.1:16651" || pca != pulsarCA {
		t.Errorf("PulsarTLS = %q, %q", purl, pca)
	}
	if token != "a.b.c" {
		t.Errorf("PulsarToken = %q", token)
	}
}

func TestSecureMissingFailsInCI(t *testing.T) {
	t.Setenv(EnvCI, "true")
	cases := map[string]missingCase{
		"kafka-tls":          {EnvKafkaTLSBrokers, func(tb testing.TB) { KafkaTLS(tb) }},
		"kafka-tls-ca":       {EnvKafkaTLSCA, func(tb testing.TB) { KafkaTLS(tb) }},
		"kafka-sasl-tls":     {EnvKafkaSASLTLSBrokers, func(tb testing.TB) { KafkaSASLTLS(tb) }},
		"kafka-sasl-tls-ca":  {EnvKafkaTLSCA, func(tb testing.TB) { KafkaSASLTLS(tb) }},
		"kafka-sasl-tls-pwd": {EnvKafkaSASLPassword, func(tb testing.TB) { KafkaSASLTLS(tb) }},
		"pulsar-tls":         {EnvPulsarTLSURL, func(tb testing.TB) { PulsarTLS(tb) }},
		"pulsar-tls-ca":      {EnvPulsarTLSCA, func(tb testing.TB) { PulsarTLS(tb) }},
		"pulsar-token":       {EnvPulsarToken, func(tb testing.TB) { PulsarToken(tb) }},
	}
	checkMissingFailsInCI(t, func(t *testing.T) { setAllSecure(t) }, "", cases)
}

func TestSecureMissingSkipsOutsideCI(t *testing.T) {
	setAllSecure(t)
	t.Setenv(EnvCI, "")
	t.Setenv(EnvPulsarToken, "")
	f := run("T", func(tb testing.TB) { PulsarToken(tb) })
	if f.skip == "" || f.fatal != "" || !strings.Contains(f.skip, EnvPulsarToken) {
		t.Fatalf("want a skip naming %s, got fatal=%q skip=%q", EnvPulsarToken, f.fatal, f.skip)
	}
}

func TestSecureMalformedFailsEvenOutsideCI(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		env, value string
		call       func(testing.TB)
	}{
		"kafka CA missing":   {EnvKafkaTLSCA, filepath.Join(t.TempDir(), "absent.pem"), func(tb testing.TB) { KafkaTLS(tb) }},
		"kafka CA not PEM":   {EnvKafkaTLSCA, notPEM, func(tb testing.TB) { KafkaTLS(tb) }},
		"kafka TLS no port":  {EnvKafkaTLSBrokers, "127.0.0.1", func(tb testing.TB) { KafkaTLS(tb) }},
		"pulsar TLS plain":   {EnvPulsarTLSURL, "pulsar://127.0.0.1:16650", func(tb testing.TB) { PulsarTLS(tb) }},
		"pulsar CA not PEM":  {EnvPulsarTLSCA, notPEM, func(tb testing.TB) { PulsarTLS(tb) }},
		"sasl TLS no port":   {EnvKafkaSASLTLSBrokers, "127.0.0.1:", func(tb testing.TB) { KafkaSASLTLS(tb) }},
		"pulsar TLS no port": {EnvPulsarTLSURL, "pulsar+ssl://127.0.0.1", func(tb testing.TB) { PulsarTLS(tb) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			setAllSecure(t)
			t.Setenv(EnvCI, "")
			t.Setenv(c.env, c.value)
			f := run("T", c.call)
			if f.fatal == "" || f.skip != "" {
				t.Fatalf("want a failure, got fatal=%q skip=%q", f.fatal, f.skip)
			}
			if !strings.Contains(f.fatal, c.env) && !strings.Contains(f.fatal, c.value) {
				t.Errorf("message %q should name %s or %s", f.fatal, c.env, c.value)
			}
		})
	}
}

func TestTLSConfigRejectsNonPEM(t *testing.T) {
	f := run("T", func(tb testing.TB) { TLSConfig(tb, filepath.Join(t.TempDir(), "absent.pem")) })
	if f.fatal == "" {
		t.Fatal("TLSConfig accepted a missing file")
	}
}
