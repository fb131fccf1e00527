package wire

import (
	"strconv"
	"unicode/utf8"
)

// ProjectFresh returns ProjectBody of the body Encode writes for e without
// parsing it, and true, when it can. It can when e was built by Make, not
// decoded, and every projected string is valid UTF-8; else it returns
// false.
func ProjectFresh(e *Envelope) (Projection, bool) {
	if e == nil || e.src != "" || !utf8.ValidString(e.Job) || !utf8.ValidString(e.TraceID) ||
		!utf8.ValidString(e.Meta.ID) || !utf8.ValidString(e.Meta.Lang) {
		return Projection{}, false
	}
	return Projection{
		Job: e.Job, TraceID: e.TraceID, MessageID: e.Meta.ID,
		SchemaVersion: strconv.Itoa(e.Meta.SchemaVersion), SourceLang: e.Meta.Lang,
		Attempts: strconv.Itoa(e.Attempts), CreatedAt: e.Meta.CreatedAt, HasCreatedAt: true,
	}, true
}
