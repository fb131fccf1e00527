package conformance

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Payload names exact bytes in a manifest, in one of three ways:
//
//	{"file": "fixtures/x.json"}  the file's bytes, as stored (no trailing newline is added or removed)
//	{"text": "..."}               the UTF-8 bytes of the JSON string
//	{"base64": "..."}             standard base64 (RFC 4648 §4, padded), for bytes JSON cannot hold
//
// Exactly one of the three must be set.
type Payload struct {
	File   *string `json:"file,omitempty"`
	Text   *string `json:"text,omitempty"`
	Base64 *string `json:"base64,omitempty"`
}

// Bytes returns the payload's bytes, reading a file from s.
func (p Payload) Bytes(s *Suite) ([]byte, error) {
	n := 0
	for _, set := range []bool{p.File != nil, p.Text != nil, p.Base64 != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("%w: a payload needs exactly one of file, text, base64", ErrSuite)
	}
	switch {
	case p.File != nil:
		return s.ReadFile(*p.File)
	case p.Text != nil:
		return []byte(*p.Text), nil
	default:
		b, err := base64.StdEncoding.DecodeString(*p.Base64)
		if err != nil {
			return nil, fmt.Errorf("%w: payload base64: %v", ErrSuite, err)
		}
		return b, nil
	}
}

// optString is a JSON value that may be a string, null or absent.
type optString struct {
	Set   bool // the key was present
	Null  bool // the value was null
	Value string
}

// UnmarshalJSON records presence and null.
func (o *optString) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

// headerList is an ordered header list written as [["key","value"], ...].
type headerList []Header

// UnmarshalJSON reads [[key, value], ...].
func (h *headerList) UnmarshalJSON(b []byte) error {
	var pairs [][2]string
	if err := json.Unmarshal(b, &pairs); err != nil {
		return fmt.Errorf("headers must be [[key, value], ...]: %w", err)
	}
	out := make(headerList, len(pairs))
	for i, p := range pairs {
		out[i] = Header{Key: p[0], Value: p[1]}
	}
	*h = out
	return nil
}
