package wire

import (
	"encoding/json"
	"testing"
)

// jsonAttempts is the reference: what encoding/json reads as the top-level
// attempts of a valid JSON object, when it is a plain integer in range.
func jsonAttempts(body []byte) (int, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return 0, false
	}
	raw, ok := top["attempts"]
	if !ok {
		return 0, false
	}
	return parseUint31(raw)
}

func TestBodyAttemptsAgreesWithEncodingJSON(t *testing.T) {
	bodies := []string{
		`{"job":"urn:x","attempts":3}`,
		`{"job":"urn:x","attempts":3 }`,
		"{\"job\":\"urn:x\",\n  \"attempts\" : 12\n}\n",
		`{"attempts":2,"job":"urn:x"}`,
		`{"attempts":2,"job":"urn:x","attempts":7}`,
		`{"attempts":-1}`,
		`{"attempts":1.5}`,
		`{"attempts":"3"}`,
		`{"attempts":2147483648}`,
		`{"attempts":2147483647}`,
		`{"data":{"attempts":9},"attempts":1}`,
		`{"data":{"attempts":9}}`,
		`{"x\"attempts":5}`,
		`{"x":"\"attempts\":5}"}`,
		`{"attempts":0}`,
		`{}`,
		`[1,2]`,
		``,
		`{ "attempts" : 12 , "x":{"attempts":3}}`,
		`{"attempt\u0073":4}`,
		`{"attempts":1.0}`,
		`{"attempts":1e2}`,
		`{"a":"q\"uote}","attempts":5,"b":[1,{"c":[]},"]"]}`,
		`{"attempts":null}`,
		`{"a":"x\\","attempts":4}`,
		`{"a":"x\\\"","attempts":6}`,
		`{"attempts":9} `,
		"\xff",
		`not json`,
	}
	for _, b := range bodies {
		gotN, gotOK := BodyAttempts([]byte(b))
		wantN, wantOK := jsonAttempts([]byte(b))
		if json.Valid([]byte(b)) && (gotN != wantN || gotOK != wantOK) {
			t.Errorf("BodyAttempts(%s) = %d,%v; encoding/json reads %d,%v", b, gotN, gotOK, wantN, wantOK)
		}
		if sn, sok := BodyAttempts(b); sn != gotN || sok != gotOK {
			t.Errorf("BodyAttempts of the string %s = %d,%v, of its bytes %d,%v", b, sn, sok, gotN, gotOK)
		}
	}
}

func FuzzBodyAttempts(f *testing.F) {
	f.Add([]byte(`{"job":"urn:x","attempts":3}`))
	f.Add([]byte(`{"x\"attempts":5}`))
	f.Add([]byte(`{"attempts":1,"attempts":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return // a malformed body may be misread; SetAttempts guards edits
		}
		gotN, gotOK := BodyAttempts(body)
		wantN, wantOK := jsonAttempts(body)
		if gotN != wantN || gotOK != wantOK {
			t.Errorf("BodyAttempts(%q) = %d,%v; encoding/json reads %d,%v", body, gotN, gotOK, wantN, wantOK)
		}
	})
}
