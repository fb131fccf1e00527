package pulsar

import (
	"bytes"
	"encoding/json"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// referenceAttempts is the slow, obviously right reading of integerAttempts.
func referenceAttempts(body []byte) (int, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return 0, false
	}
	raw, ok := obj["attempts"]
	if !ok {
		return 0, false
	}
	return babelqueue.ParseAttemptsHeader(string(bytes.TrimSpace(raw)))
}

var attemptsSeeds = []string{
	envelope,
	`{"attempts":7}`,
	`{ "attempts" : 12 , "x":{"attempts":3}}`,
	`{"x":{"attempts":3}}`,
	`{"attempts":1,"attempts":2}`,
	`{"attempt\u0073":4}`,
	`{"attempts":"4"}`,
	`{"attempts":-1}`,
	`{"attempts":1.0}`,
	`{"attempts":1e2}`,
	`{"attempts":2147483648}`,
	`{"a":"q\"uote}","attempts":5,"b":[1,{"c":[]},"]"]}`,
	`{}`,
	`[]`,
	`"attempts"`,
	`{"attempts":3`,
	`not json`,
	"\xff",
	`{"attempts":null}`,
	`{"a":"x","attempts":12}`,
	`{"attempts":1,"b":{"attempts":2}}`,
	`{"b":{"attempts":2},"attempts":3}`,
	`{"a":"x\\","attempts":4}`,
	`{"a":"x\\\"","attempts":6}`,
	`{"a":1,"attempts":007}`,
	`x"attempts":8}`,
	`{"attempts":9} `,
	`"attempts":}`,
}

func TestIntegerAttemptsMatchesEncodingJSON(t *testing.T) {
	for _, b := range attemptsSeeds {
		gotN, gotOK := integerAttempts([]byte(b))
		wantN, wantOK := referenceAttempts([]byte(b))
		if json.Valid([]byte(b)) && (gotN != wantN || gotOK != wantOK) {
			t.Errorf("%s: got %d,%v want %d,%v", b, gotN, gotOK, wantN, wantOK)
		}
		if !json.Valid([]byte(b)) && gotOK {
			// Tolerated only because SetAttempts refuses malformed JSON.
			if _, err := babelqueue.SetAttempts([]byte(b), gotN+1); err == nil {
				t.Errorf("%s: misread as attempts %d and SetAttempts accepted it", b, gotN)
			}
		}
	}
}

func FuzzIntegerAttempts(f *testing.F) {
	for _, s := range attemptsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gotN, gotOK := integerAttempts(b)
		if !json.Valid(b) {
			return
		}
		if wantN, wantOK := referenceAttempts(b); gotN != wantN || gotOK != wantOK {
			t.Errorf("%q: got %d,%v want %d,%v", b, gotN, gotOK, wantN, wantOK)
		}
	})
}
