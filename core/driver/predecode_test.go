package driver

import (
	"errors"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestDecodedUsesThePredecodedEnvelopeOnce(t *testing.T) {
	m := &ReceivedMessage{Body: `{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`}
	m.Predecode()
	pre := &m.pre.env
	env, err := m.Decoded()
	if err != nil || env != pre {
		t.Fatalf("Decoded = %p, %v; want the predecoded envelope %p", env, err, pre)
	}
	if m.pre != nil {
		t.Fatal("the predecoded envelope was kept")
	}
	again, err := m.Decoded()
	if err != nil || again == env || again.Job != "urn:a" {
		t.Fatalf("second Decoded = %p, %v; want a fresh decode", again, err)
	}
}

func TestDecodedIgnoresAPredecodeOfAnotherBody(t *testing.T) {
	m := &ReceivedMessage{Body: `{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`}
	m.Predecode()
	m.Body = `{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":4}`
	env, err := m.Decoded()
	if err != nil || env.Attempts != 4 {
		t.Fatalf("Decoded = %+v, %v; want the changed body (attempts 4)", env, err)
	}
}

func TestPredecodeKeepsTheDecodeError(t *testing.T) {
	m := &ReceivedMessage{Body: `{"job":"urn:a"}`}
	m.Predecode()
	d, err := m.Decoded()
	if !errors.Is(err, wire.ErrPoison) || d == nil {
		t.Fatalf("Decoded of a predecoded poison body = %v, %v; want wire.ErrPoison", d, err)
	}
	// Used once: a second delivery of the same message decodes afresh.
	if m.pre != nil {
		t.Fatal("the predecoded delivery was kept")
	}
	m.Body = `not json`
	if _, err := m.Decoded(); !errors.Is(err, wire.ErrPoison) {
		t.Fatalf("Decoded = %v, want wire.ErrPoison", err)
	}
}
