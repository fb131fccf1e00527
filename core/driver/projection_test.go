package driver

import (
	"testing"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestOutgoingProjectionGivenOrParsed(t *testing.T) {
	body := `{"job":"urn:a","trace_id":"t","data":{},"meta":{"id":"m","queue":"q","lang":"go","schema_version":1,"created_at":5},"attempts":0}`
	out := &Outgoing{Body: body}
	if got, want := out.Projection(), wire.ProjectBody([]byte(body)); got != want {
		t.Fatalf("parsed %+v; want %+v", got, want)
	}
	SetProjection(out, wire.Projection{Job: "given"})
	if got := out.Projection(); got.Job != "given" {
		t.Fatalf("given projection ignored: %+v", got)
	}
	out.Body = string([]byte(body)) // another body (same text, other bytes): parsed again
	if got := out.Projection(); got.Job != "urn:a" {
		t.Fatalf("a changed body must be parsed again: %+v", got)
	}
}
