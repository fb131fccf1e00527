package gdpr_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func mustAES(t testing.TB, key []byte) *gdpr.AESGCM {
	t.Helper()
	c, err := gdpr.NewAESGCM(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var key1 = bytes.Repeat([]byte{1}, 32)

func TestProtectKeepsEveryOtherByte(t *testing.T) {
	data := []byte(`{"z":1,"email" : "a@b.c","big":12345678901234567890123,"profile":{"full_name":"Al","x":[1, 2]},"unknown":{"k":true}}`)
	paths := gdpr.NewPaths("email", "profile.full_name", "absent.field", "")
	c := mustAES(t, key1)
	prot, err := gdpr.Protect(data, paths, c)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(prot, []byte("a@b.c")) || bytes.Contains(prot, []byte(`"Al"`)) {
		t.Fatalf("cleartext left in %s", prot)
	}
	for _, keep := range []string{`{"z":1,"email" : "`, `","big":12345678901234567890123,"profile":{"full_name":"`, `","x":[1, 2]},"unknown":{"k":true}}`} {
		if !bytes.Contains(prot, []byte(keep)) {
			t.Errorf("protected %s lost %q", prot, keep)
		}
	}
	back, err := gdpr.Unprotect(prot, paths, c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("round trip\n got %s\nwant %s", back, data)
	}
	again, err := gdpr.Unprotect(back, gdpr.NewPaths("big", "profile", "unknown.k"), c)
	if err != nil || !bytes.Equal(again, back) {
		t.Fatalf("non-string leaves must be left alone: %s, %v", again, err)
	}
}

func TestProtectContainersAndArrays(t *testing.T) {
	data := []byte(`{"addresses":[{"line":"1 Main","zip":"1"},{"zip":"2"},7,{"line":{"a":1}}],"card":{"n":"4242","exp":[1,2030]},"tags":["a","b"]}`)
	paths := gdpr.NewPaths("addresses[].line", "card", "card.n", "tags[]")
	c := mustAES(t, key1)
	prot, err := gdpr.Protect(data, paths, c)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Addresses []any `json:"addresses"`
		Card      any   `json:"card"`
		Tags      []any `json:"tags"`
	}
	if err := json.Unmarshal(prot, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Card.(string); !ok {
		t.Errorf("a marked object must become one string: %s", prot)
	}
	for _, tag := range m.Tags {
		if s, _ := tag.(string); s == "a" || s == "b" {
			t.Errorf("array elements not encrypted: %s", prot)
		}
	}
	if l := m.Addresses[0].(map[string]any)["line"]; l == "1 Main" {
		t.Errorf("addresses[0].line not encrypted")
	}
	if _, ok := m.Addresses[3].(map[string]any)["line"].(string); !ok {
		t.Errorf("an object leaf must be encrypted whole: %s", prot)
	}
	if !bytes.Contains(prot, []byte(`{"zip":"2"},7,{"line":"`)) {
		t.Errorf("elements without the path must stay: %s", prot)
	}
	back, err := gdpr.Unprotect(prot, paths, c)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("round trip: %s, %v", back, err)
	}
}

func TestUnprotectFailsLoudly(t *testing.T) {
	paths := gdpr.NewPaths("email")
	prot, err := gdpr.Protect([]byte(`{"email":"a@b.c"}`), paths, mustAES(t, key1))
	if err != nil {
		t.Fatal(err)
	}
	other := mustAES(t, bytes.Repeat([]byte{2}, 16))
	if _, err := gdpr.Unprotect(prot, paths, other); !errors.Is(err, gdpr.ErrDecrypt) {
		t.Errorf("wrong key: %v", err)
	}
	tampered := bytes.Replace(prot, []byte(`":"`), []byte(`":"AAAA`), 1)
	if _, err := gdpr.Unprotect(tampered, paths, mustAES(t, key1)); !errors.Is(err, gdpr.ErrDecrypt) {
		t.Errorf("tampered: %v", err)
	}
	if _, err := gdpr.Unprotect([]byte(`{"email":"plain text"}`), paths, mustAES(t, key1)); !errors.Is(err, gdpr.ErrDecrypt) {
		t.Errorf("a cleartext string is not a ciphertext: %v", err)
	}
	notJSON, _ := mustAES(t, key1).Encrypt([]byte("{nope"))
	if _, err := gdpr.Unprotect([]byte(`{"email":"`+notJSON+`"}`), paths, mustAES(t, key1)); !errors.Is(err, gdpr.ErrDecrypt) {
		t.Errorf("plaintext that is not JSON: %v", err)
	}
	if _, err := gdpr.Protect([]byte(`[1]`), paths, mustAES(t, key1)); !errors.Is(err, wire.ErrInvalidData) {
		t.Errorf("data that is not an object: %v", err)
	}
}

func TestAESGCMKeySizes(t *testing.T) {
	for _, n := range []int{16, 24, 32} {
		c := mustAES(t, make([]byte, n))
		ct, err := c.Encrypt([]byte(`"x"`))
		if err != nil {
			t.Fatal(err)
		}
		if pt, err := c.Decrypt(ct); err != nil || string(pt) != `"x"` {
			t.Errorf("%d-byte key: %s, %v", n, pt, err)
		}
		ct2, _ := c.Encrypt([]byte(`"x"`))
		if ct2 == ct {
			t.Errorf("two encryptions share a nonce")
		}
	}
	for _, n := range []int{0, 15, 31, 33} {
		if _, err := gdpr.NewAESGCM(make([]byte, n)); !errors.Is(err, gdpr.ErrKey) {
			t.Errorf("%d-byte key accepted: %v", n, err)
		}
	}
}

// The vector was written by the Python SDK's gdpr.protect with the AES-GCM
// cipher its documentation gives (cryptography's AESGCM, nonce first,
// standard base64).
func TestOpensPythonCiphertext(t *testing.T) {
	raw, err := os.ReadFile("testdata/python_vector.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		KeyHex    string          `json:"key_hex"`
		Cleartext json.RawMessage `json:"cleartext"`
		Protected json.RawMessage `json:"protected"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	paths := gdpr.NewPaths("addresses[].line", "card", "email", "profile.full_name")
	var compact bytes.Buffer
	_ = json.Compact(&compact, v.Protected)
	back, err := gdpr.Unprotect(compact.Bytes(), paths, mustAES(t, key))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(back, &got)
	_ = json.Unmarshal(v.Cleartext, &want)
	if g, w := canon(got), canon(want); g != w {
		t.Fatalf("got %s\nwant %s", g, w)
	}
}

func canon(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestKeyringRotation(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{8}, 32)
	paths := gdpr.NewPaths("email")
	before, _ := gdpr.Protect([]byte(`{"email":"a@b.c"}`), paths, mustAES(t, oldKey))
	ring, err := gdpr.NewAESGCMKeyring(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := gdpr.Unprotect(before, paths, ring); err != nil || string(back) != `{"email":"a@b.c"}` {
		t.Fatalf("old ciphertext through the ring: %s, %v", back, err)
	}
	after, _ := gdpr.Protect([]byte(`{"email":"a@b.c"}`), paths, ring)
	if back, err := gdpr.Unprotect(after, paths, mustAES(t, newKey)); err != nil || string(back) != `{"email":"a@b.c"}` {
		t.Fatalf("the ring must write the reference format under the newest key: %s, %v", back, err)
	}
	if _, err := gdpr.Unprotect(after, paths, mustAES(t, oldKey)); !errors.Is(err, gdpr.ErrDecrypt) {
		t.Fatalf("the ring encrypted with the old key: %v", err)
	}
	if _, err := gdpr.NewAESGCMKeyring(newKey, []byte("short")); !errors.Is(err, gdpr.ErrKey) {
		t.Fatalf("bad key accepted: %v", err)
	}
}

func TestCryptoShredding(t *testing.T) {
	keys := map[string]gdpr.Cipher{
		"cust-1": mustAES(t, bytes.Repeat([]byte{1}, 32)),
		"cust-2": mustAES(t, bytes.Repeat([]byte{2}, 32)),
	}
	lookup := func(subject string) (gdpr.Cipher, error) {
		c, ok := keys[subject]
		if !ok {
			return nil, errors.New("key erased")
		}
		return c, nil
	}
	p, err := gdpr.NewProtector(gdpr.PathsByURN{"urn:u": gdpr.NewPaths("email")}, nil, gdpr.WithSubjectKeys("customer_id", lookup))
	if err != nil {
		t.Fatal(err)
	}
	m1, err := p.ProtectFields("urn:u", []byte(`{"customer_id":"cust-1","email":"one@x"}`))
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := p.ProtectFields("urn:u", []byte(`{"customer_id":"cust-2","email":"two@x"}`))
	if _, err := gdpr.Unprotect(m1, gdpr.NewPaths("email"), keys["cust-2"]); !errors.Is(err, gdpr.ErrDecrypt) {
		t.Fatalf("subjects must not share a key: %v", err)
	}
	delete(keys, "cust-1") // erase subject 1
	if _, err := p.UnprotectFields("urn:u", m1); !errors.Is(err, gdpr.ErrDecrypt) {
		t.Fatalf("an erased subject must be unreadable: %v", err)
	}
	if back, err := p.UnprotectFields("urn:u", m2); err != nil || !strings.Contains(string(back), "two@x") {
		t.Fatalf("other subjects stay readable: %s, %v", back, err)
	}
	if _, err := p.ProtectFields("urn:u", []byte(`{"email":"nobody@x"}`)); !errors.Is(err, gdpr.ErrKey) {
		t.Fatalf("no subject and no default cipher: %v", err)
	}
	if _, err := gdpr.NewProtector(nil, nil); !errors.Is(err, gdpr.ErrKey) {
		t.Fatalf("no source, no cipher: %v", err)
	}
}
