package wire

import (
	"encoding/base64"
	"unicode/utf8"
)

// PoisonBody returns the dead-letter body of a poison message (CONTRACT.md 4.2).
// dl.Reason is forced to ReasonPoison.
//
//   - A strict JSON object (valid UTF-8 that parses as one object) keeps
//     every byte and gains a dead_letter block after its last member (an
//     existing dead_letter member is replaced in place, its unknown keys
//     kept). attempts is not touched.
//   - Any other body is wrapped as {"raw":<body as a JSON string>,
//     "dead_letter":{...}}; a body that is not valid UTF-8 is wrapped as
//     {"raw":<standard base64 of body>,"raw_encoding":"base64",
//     "dead_letter":{...}}. The keys come in that order.
func PoisonBody(body []byte, dl DeadLetter) []byte {
	dl.Reason = ReasonPoison
	if _, _, err := scanTopObject(body); err == nil {
		if out, err := setDeadLetterBlock(body, dl); err == nil {
			return out
		}
	}
	out := make([]byte, 0, len(body)+len(body)/3+200)
	out = append(out, `{"raw":`...)
	if utf8.Valid(body) {
		out = appendJSONString(out, string(body))
	} else {
		out = append(out, '"')
		out = base64.StdEncoding.AppendEncode(out, body)
		out = append(out, `","raw_encoding":"base64"`...)
	}
	out = append(out, `,"dead_letter":`...)
	out = appendDeadLetter(out, dl, nil)
	return append(out, '}')
}
