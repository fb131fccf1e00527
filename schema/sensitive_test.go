package schema_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/schema"
)

const gdprSchema = `{
  "type": "object",
  "x-gdpr-sensitive": true,
  "properties": {
    "order_id": {"type": "integer"},
    "email": {"type": "string", "minLength": 5, "x-gdpr-sensitive": "contact"},
    "profile": {"type": "object", "properties": {"full_name": {"x-gdpr-sensitive": true}, "age": {"x-gdpr-sensitive": false}}},
    "addresses": {"type": "array", "items": {"properties": {"line": {"x-gdpr-sensitive": true}, "zip": {"x-gdpr-sensitive": ""}}}},
    "card": {"type": "object", "x-gdpr-sensitive": "payment"},
    "note": {"x-gdpr-sensitive": 1}
  }
}`

func TestSensitivePaths(t *testing.T) {
	got, err := schema.SensitivePaths([]byte(gdprSchema))
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.SensitivePath{{Path: ""}, {Path: "addresses[].line"}, {Path: "card", Category: "payment"}, {Path: "email", Category: "contact"}, {Path: "profile.full_name"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := schema.SensitivePaths([]byte(`{`)); err == nil {
		t.Fatal("a broken schema must fail")
	}
}

func TestRegistryIsAPathSource(t *testing.T) {
	r := schema.NewRegistry()
	if err := r.Register("urn:x", []byte(gdprSchema)); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("urn:plain", []byte(`{"type":"object"}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SensitivePaths("urn:x").Strings(), []string{"addresses[].line", "card", "email", "profile.full_name"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v (the root mark addresses nothing)", got, want)
	}
	if r.SensitivePaths("urn:plain").Len() != 0 || r.SensitivePaths("urn:none").Len() != 0 {
		t.Fatal("no marks, no paths")
	}
	c, _ := gdpr.NewAESGCM(bytes.Repeat([]byte{9}, 32))
	p, err := gdpr.NewProtector(r, c)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"order_id":1,"email":"alice@example.com","profile":{"full_name":"A","age":3}}`)
	prot, err := p.ProtectFields("urn:x", data)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(prot, []byte("alice")) {
		t.Fatalf("email not protected: %s", prot)
	}
	// The cleartext is what the schema checks: minLength passes before
	// protection and after unprotection.
	back, err := p.UnprotectFields("urn:x", prot)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("%s, %v", back, err)
	}
	if err := r.ValidatePayload("urn:x", back); err != nil {
		t.Fatal(err)
	}
}
