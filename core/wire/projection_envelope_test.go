package wire

import "testing"

func TestProjectFreshEqualsProjectBody(t *testing.T) {
	for _, job := range []string{"urn:babel:orders:created", "urn:\"quoted\"\\é\u2028", "urn:x\x01"} {
		e, err := Make(job, map[string]any{"job": "not me", "n": 1})
		if err != nil {
			t.Fatal(err)
		}
		e.Attempts = 3
		body, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ProjectFresh(e)
		if want := ProjectBody(body); !ok || got != want {
			t.Errorf("job %q: ProjectFresh = %+v, %v; ProjectBody = %+v", job, got, ok, want)
		}
	}
	if _, ok := ProjectFresh(&Envelope{Job: "\xff"}); ok {
		t.Error("invalid UTF-8 must fall back to parsing")
	}
}
