package main

import (
	"strings"
	"testing"
)

// bq publish --stdin writes whole envelopes as given, so it refuses one
// carrying a key no producer may write (CONTRACT.md 2.10), naming it.
func TestPublishLinesRefuseForbiddenKeys(t *testing.T) {
	for body, ptr := range map[string]string{
		`{"job":"urn:bq:x","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1,"ts":1},"attempts":0}`:        "/meta/ts",
		`{"urn":"urn:bq:x","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1},"attempts":0}`:               "/urn",
		`{"job":"urn:bq:x","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1},"attempts":0,"timestamp":1}`: "/timestamp",
	} {
		if _, err := readPublishLines(strings.NewReader(body+"\n"), ""); err == nil || !strings.Contains(err.Error(), ptr) {
			t.Errorf("%s: %v, want a refusal naming %s", body, err, ptr)
		}
	}
	items, err := readPublishLines(strings.NewReader(`{"job":"urn:bq:x","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1,"ext":{"acme":1}},"attempts":0}`+"\n"), "")
	if err != nil || len(items) != 1 {
		t.Fatalf("an envelope with meta.ext: %v", err)
	}
}
