package wire

import (
	"reflect"
	"testing"
)

func TestProjectBody(t *testing.T) {
	tests := []struct {
		name, body string
		want       Projection
	}{
		{"canonical", validBody, Projection{Job: "urn:babel:orders:created", TraceID: "t-1", MessageID: "m-1",
			SchemaVersion: "1", SourceLang: "php", Attempts: "0", CreatedAt: 1749132727000, HasCreatedAt: true}},
		{"urn alias", `{"urn":"A","attempts":7}`, Projection{Job: "A", Attempts: "7"}},
		{"job wins over urn", `{"urn":"A","job":"B"}`, Projection{Job: "B"}},
		{"blank job falls back", `{"urn":"A","job":" "}`, Projection{Job: "A"}},
		{"escaped strings", `{"job":"\u0041","meta":{"id":"i\"d"}}`, Projection{Job: "A", MessageID: `i"d`}},
		{"schema version 2", `{"meta":{"schema_version":2}}`, Projection{SchemaVersion: "2"}},
		{"schema version string", `{"meta":{"schema_version":"x"}}`, Projection{SchemaVersion: "x"}},
		{"schema version null", `{"meta":{"schema_version":null}}`, Projection{}},
		{"attempts invalid", `{"attempts":-1}`, Projection{}},
		{"attempts fraction", `{"attempts":1.5}`, Projection{}},
		{"attempts too large", `{"attempts":2147483648}`, Projection{}},
		{"attempts duplicate last wins", `{"attempts":2,"attempts":"x"}`, Projection{}},
		{"created_at not integer", `{"meta":{"created_at":1.5}}`, Projection{}},
		{"created_at zero", `{"meta":{"created_at":0}}`, Projection{HasCreatedAt: true}},
		{"wrong types", `{"job":1,"trace_id":[],"meta":{"id":{},"lang":false}}`, Projection{}},
		{"meta not object", `{"job":"u","meta":"x"}`, Projection{Job: "u"}},
		{"not json", `{"job":"u"`, Projection{}},
		{"not an object", `["job"]`, Projection{}},
		{"empty", ``, Projection{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProjectBody([]byte(tt.body)); got != tt.want {
				t.Fatalf("ProjectBody = %+v, want %+v", got, tt.want)
			}
			if got := ProjectString(tt.body); got != tt.want {
				t.Fatalf("ProjectString = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProjectionHeaders(t *testing.T) {
	p := ProjectBody([]byte(validBody))
	want := []Header{
		{HeaderJob, "urn:babel:orders:created"},
		{HeaderTraceID, "t-1"},
		{HeaderMessageID, "m-1"},
		{HeaderSchemaVersion, "1"},
		{HeaderSourceLang, "php"},
		{HeaderAttempts, "0"},
	}
	if got := p.Headers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Headers = %v", got)
	}
	sparse := Projection{Job: "j", TraceID: " ", SourceLang: "go", Attempts: "3"}
	want = []Header{{HeaderJob, "j"}, {HeaderSourceLang, "go"}, {HeaderAttempts, "3"}}
	if got := sparse.Headers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sparse Headers = %v", got)
	}
	if got := (Projection{}).Headers(); len(got) != 0 {
		t.Fatalf("empty Headers = %v", got)
	}
}

func TestProjectionOfMadeEnvelope(t *testing.T) {
	env, err := Make("urn:x", nil, WithQueue("q"))
	if err != nil {
		t.Fatal(err)
	}
	env.Attempts = 2
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	p := ProjectBody(b)
	want := Projection{Job: "urn:x", TraceID: env.TraceID, MessageID: env.Meta.ID, SchemaVersion: "1", SourceLang: "go",
		Attempts: "2", CreatedAt: env.Meta.CreatedAt, HasCreatedAt: true}
	if p != want {
		t.Fatalf("ProjectBody = %+v, want %+v", p, want)
	}
}
