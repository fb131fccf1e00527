package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCertsServerCertificateVerifiesAgainstTheCA(t *testing.T) {
	dir, read := generate(t, runCerts, "-hosts", "127.0.0.1,localhost")
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(read(certsCAFile)) {
		t.Fatal("ca.pem holds no certificate")
	}
	pair, err := tls.X509KeyPair(read(certsServerFile), read(certsKeyFile))
	if err != nil {
		t.Fatalf("server.pem and server.key do not pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: time.Now()}); err != nil {
			t.Errorf("certificate for %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("certificate verified for a host it was not made for")
	}

	// The key is unencrypted PKCS#8, and the Kafka key store holds it
	// followed by the chain.
	block, rest := pem.Decode(read(certsKeyFile))
	if block == nil || block.Type != "PRIVATE KEY" || len(rest) != 0 {
		t.Fatalf("server.key is not one PKCS#8 PEM block: %v", block)
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		t.Fatalf("server.key: %v", err)
	}
	var types []string
	for data := read(certsKeystoreFile); ; {
		b, r := pem.Decode(data)
		if b == nil {
			break
		}
		types, data = append(types, b.Type), r
	}
	if len(types) != 3 || types[0] != "PRIVATE KEY" || types[1] != "CERTIFICATE" || types[2] != "CERTIFICATE" {
		t.Errorf("key store blocks %v, want the key then two certificates", types)
	}
	if fi, err := os.Stat(filepath.Join(dir, certsKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("server.key mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

func TestCertsNeedsADirAndAHost(t *testing.T) {
	if err := runCerts(nil); err == nil {
		t.Error("no -dir accepted")
	}
	if err := runCerts([]string{"-dir", t.TempDir(), "-hosts", " , "}); err == nil {
		t.Error("no host accepted")
	}
}
