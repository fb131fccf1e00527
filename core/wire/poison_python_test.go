package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// pythonPoisonRecords is testdata/python-poison/records.json: the records
// the Python SDK's build_poison_record wrote (see its README.md).
type pythonPoisonRecords struct {
	Blocks map[string]struct {
		Reason        string  `json:"reason"`
		Error         *string `json:"error"`
		Exception     *string `json:"exception"`
		FailedAt      int64   `json:"failed_at"`
		OriginalQueue string  `json:"original_queue"`
		Attempts      int     `json:"attempts"`
		Lang          string  `json:"lang"`
	} `json:"blocks"`
	Records []struct {
		Name   string `json:"name"`
		Block  string `json:"block"`
		Body   []byte `json:"body"`   // base64 in the file
		Record []byte `json:"record"` // base64 in the file
	} `json:"records"`
}

// TestPoisonBodyMatchesPythonSDK checks PoisonBody byte for byte against
// the Python SDK 1.24.0 for the same body and dead_letter block: when it
// splices and when it wraps (an existing dead_letter member, unpaired
// surrogate escapes, anything not one object), where the block goes, the
// whitespace dropped around the object and the string escaping.
func TestPoisonBodyMatchesPythonSDK(t *testing.T) {
	raw, err := os.ReadFile("testdata/python-poison/records.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx pythonPoisonRecords
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Records) < 80 {
		t.Fatalf("only %d records in the fixture", len(fx.Records))
	}
	for _, r := range fx.Records {
		t.Run(r.Name, func(t *testing.T) {
			b, ok := fx.Blocks[r.Block]
			if !ok {
				t.Fatalf("no block %q", r.Block)
			}
			dl := DeadLetter{Reason: b.Reason, Error: b.Error, Exception: b.Exception, FailedAt: b.FailedAt,
				OriginalQueue: b.OriginalQueue, Attempts: b.Attempts, Lang: b.Lang}
			got := PoisonBody(r.Body, dl)
			if !bytes.Equal(got, r.Record) {
				t.Fatalf("PoisonBody(%q) =\n%s\nPython SDK\n%s", r.Body, got, r.Record)
			}
		})
	}
}

// TestPoisonBodyKeepsAnEarlierDeadLetter is issue 35's case: a poison
// object that already has a dead_letter block is wrapped, so its old
// reason and custom keys survive in raw.
func TestPoisonBodyKeepsAnEarlierDeadLetter(t *testing.T) {
	body := `{"x":1,"dead_letter":{"reason":"failed","custom":"k"}}`
	got := PoisonBody([]byte(body), DeadLetter{FailedAt: 7, OriginalQueue: "orders", Attempts: 1})
	want := `{"raw":"{\"x\":1,\"dead_letter\":{\"reason\":\"failed\",\"custom\":\"k\"}}","dead_letter":` +
		`{"reason":"poison","error":null,"exception":null,"failed_at":7,"original_queue":"orders","attempts":1,"lang":"go"}}`
	if string(got) != want {
		t.Fatalf("PoisonBody =\n%s\nwant\n%s", got, want)
	}
	var w struct{ Raw string }
	if err := json.Unmarshal(got, &w); err != nil || w.Raw != body {
		t.Fatalf("raw = %q (%v), want the original body", w.Raw, err)
	}
	if dl, ok := DeadLetterOf(got); !ok || dl.Reason != ReasonPoison {
		t.Fatalf("DeadLetterOf = %+v, %v", dl, ok)
	}
}

func TestHasUnpairedSurrogateEscape(t *testing.T) {
	for s, want := range map[string]bool{
		`{"a":"x"}`:                   false,
		`{"a":"\ud83d\ude00"}`:        false,
		`{"a":"\ud83dX\ude00"}`:       false, // raw text between escapes does not count
		`{"a":"\\ud800"}`:             false,
		`{"a":"\u00e9\n"}`:            false,
		`{"a":"\ud800"}`:              true,
		`{"a":"\ud800","b":"\udc00"}`: true, // a pair never spans two literals
		`{"a":"\ude00"}`:              true,
		`{"a":"\ud800\n\udc00"}`:      true,
		`{"a":"\ud800\ud800\udc00"}`:  true,
		`{"\uDBFF":1}`:                true,
		`{"a":["\ud800\udc00","\\"]}`: false,
	} {
		if got := hasUnpairedSurrogateEscape([]byte(s)); got != want {
			t.Errorf("hasUnpairedSurrogateEscape(%s) = %v, want %v", s, got, want)
		}
	}
}
