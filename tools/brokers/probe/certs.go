package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files written by runCerts into its directory.
const (
	certsCAFile       = "ca.pem"              // the throwaway CA certificate: what clients trust
	certsServerFile   = "server.pem"          // server certificate followed by the CA certificate
	certsKeyFile      = "server.key"          // server private key, PKCS#8 PEM, unencrypted
	certsKeystoreFile = "server-keystore.pem" // key then chain in one file (Kafka's PEM key store)
)

// certsValidity bounds the certificates; the brokers are restarted long
// before, and each start makes new ones.
const certsValidity = 90 * 24 * time.Hour

// runCerts writes a throwaway CA and a server certificate it signed for the
// given hosts (IP addresses and DNS names) into -dir. The CA's private key
// is never written: nothing else can be signed with it once the command
// exits.
func runCerts(args []string) error {
	var dir, hosts string
	fs := flag.NewFlagSet("probe certs", flag.ContinueOnError)
	fs.StringVar(&dir, "dir", "", "directory to write "+strings.Join([]string{certsCAFile, certsServerFile, certsKeyFile, certsKeystoreFile}, ", ")+" into")
	fs.StringVar(&hosts, "hosts", "127.0.0.1,localhost", "comma-separated IP addresses and DNS names the server certificate is valid for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if dir == "" {
		return errors.New("-dir is required")
	}
	files, err := newCerts(strings.Split(hosts, ","), time.Now())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	for name, data := range files {
		perm := os.FileMode(0o644)
		if strings.HasSuffix(name, ".key") || name == certsKeystoreFile {
			perm = 0o600
		}
		if err := writeFileAtomic(filepath.Join(dir, name), data, perm); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return nil
}

// newCerts returns the contents of the files runCerts writes, by name.
func newCerts(hosts []string, now time.Time) (map[string][]byte, error) {
	var ips []net.IP
	var names []string
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch ip := net.ParseIP(h); {
		case h == "":
		case ip != nil:
			ips = append(ips, ip)
		default:
			names = append(names, h)
		}
	}
	if len(ips)+len(names) == 0 {
		return nil, errors.New("certs: no host for the server certificate")
	}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "babelqueue test brokers CA", Organization: []string{"babelqueue tools/brokers"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certsValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: server key: %w", err)
	}
	cn := "127.0.0.1"
	if len(names) > 0 {
		cn = names[0]
	} else if len(ips) > 0 {
		cn = ips[0].String()
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"babelqueue tools/brokers"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certsValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  ips,
		DNSNames:     names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: server certificate: %w", err)
	}
	keyPEM, err := pkcs8PEM(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caPEM...)
	return map[string][]byte{
		certsCAFile:       caPEM,
		certsServerFile:   chain,
		certsKeyFile:      keyPEM,
		certsKeystoreFile: bytes.Join([][]byte{keyPEM, chain}, nil),
	}, nil
}

// pkcs8PEM encodes key as an unencrypted PKCS#8 "PRIVATE KEY" block, the
// form both Pulsar and Kafka's PEM key store read.
func pkcs8PEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// serial returns a random positive 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n.Add(n, big.NewInt(1))
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so a reader never sees a half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
