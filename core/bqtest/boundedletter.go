package bqtest

import (
	"encoding/json"
	"testing"
)

// BoundedLetter is a bounded dead letter (wire.OversizeBody) decoded for
// assertions: the envelope fields a test checks, the oversize block and the
// dead_letter block. Partition and Offset stay nil when the body has none.
type BoundedLetter struct {
	Job      string `json:"job"`
	TraceID  string `json:"trace_id"`
	Meta     struct{ ID string }
	Oversize struct {
		Reason      string `json:"reason"`
		WriteError  string `json:"write_error"`
		Size        int    `json:"size"`
		RefusedSize int    `json:"refused_size"`
		Topic       string `json:"topic"`
		Partition   *int   `json:"partition"`
		Offset      *int64 `json:"offset"`
		MessageID   string `json:"message_id"`
	} `json:"oversize"`
	DeadLetter struct {
		Reason        string  `json:"reason"`
		Error         *string `json:"error"`
		OriginalQueue string  `json:"original_queue"`
		Attempts      int     `json:"attempts"`
		Lang          string  `json:"lang"`
	} `json:"dead_letter"`
	Data json.RawMessage `json:"data"`
}

// DecodeBoundedLetter decodes body as a bounded dead letter; a body that is
// not JSON fails the test, quoting at most 300 bytes of it.
func DecodeBoundedLetter(t testing.TB, body []byte) BoundedLetter {
	t.Helper()
	var b BoundedLetter
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("bounded dead letter is not JSON: %v: %.300s", err, body)
	}
	return b
}
