package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func TestTokenIsAnHS256JWTSignedWithTheSecret(t *testing.T) {
	_, read := generate(t, runToken, "-subject", "role-x")
	secret := read(tokenSecretFile)
	if len(secret) != tokenSecretBytes {
		t.Fatalf("secret: %d bytes, want %d", len(secret), tokenSecretBytes)
	}
	raw := read(tokenFile)
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a compact JWS", raw)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if sig, err := base64.RawURLEncoding.DecodeString(parts[2]); err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		t.Fatalf("signature does not verify with the secret (%v)", err)
	}
	var header map[string]string
	var claims map[string]any
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	if header["alg"] != "HS256" || claims["sub"] != "role-x" || len(claims) != 1 {
		t.Errorf("header %v claims %v", header, claims)
	}
}

func TestTokenNeedsADirAndASubject(t *testing.T) {
	if err := runToken([]string{"-subject", "x"}); err == nil {
		t.Error("no -dir accepted")
	}
	if err := runToken([]string{"-dir", t.TempDir(), "-subject", " "}); err == nil {
		t.Error("blank subject accepted")
	}
}
