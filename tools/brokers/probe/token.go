package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Files written by runToken into its directory.
const (
	tokenSecretFile = "token-secret.key" // raw HMAC key bytes (Pulsar's tokenSecretKey=file://...)
	tokenFile       = "token.jwt"        // a token signed with it, without a trailing newline
)

// tokenSecretBytes is the HMAC key length: HS256 needs at least 256 bits.
const tokenSecretBytes = 32

// runToken writes a fresh HMAC secret key and an HS256 JWT signed with it,
// whose subject (Pulsar's role) is -subject, into -dir. The token carries
// no expiry: it lives as long as the broker that checks it.
func runToken(args []string) error {
	var dir, subject string
	fs := flag.NewFlagSet("probe token", flag.ContinueOnError)
	fs.StringVar(&dir, "dir", "", "directory to write "+tokenSecretFile+" and "+tokenFile+" into")
	fs.StringVar(&subject, "subject", "bq-client", "the token's sub claim (the role the broker sees)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if dir == "" || strings.TrimSpace(subject) == "" {
		return errors.New("-dir and a non-blank -subject are required")
	}
	secret := make([]byte, tokenSecretBytes)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("token: secret: %w", err)
	}
	token, err := signHS256(secret, map[string]any{"sub": subject})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, tokenSecretFile), secret, 0o600); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, tokenFile), []byte(token), 0o600); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	return nil
}

// signHS256 returns the compact JWS (RFC 7515) of claims signed with
// HMAC-SHA256 under secret.
func signHS256(secret []byte, claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
	if err != nil {
		return "", fmt.Errorf("token: header: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("token: claims: %w", err)
	}
	enc := base64.RawURLEncoding
	signingInput := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signingInput))
	return signingInput + "." + enc.EncodeToString(mac.Sum(nil)), nil
}
