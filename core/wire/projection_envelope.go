package wire

import (
	"strconv"
	"unicode/utf8"
)

// ProjectFresh returns the projection of the body Encode writes for e, and
// true, when e was built by Make (not decoded) and every projected string
// is valid UTF-8, so that it equals ProjectBody of that body without
// parsing it; else false.
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
