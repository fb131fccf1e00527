package wire

import "strconv"

// Projection holds the envelope fields that the bindings copy onto native
// headers or properties (Kafka record headers, Pulsar properties), as the
// strings those headers carry.
type Projection struct {
	// Job is the URN (job, or the urn alias) → bq-job.
	Job string
	// TraceID → bq-trace-id.
	TraceID string
	// MessageID is meta.id → bq-message-id.
	MessageID string
	// SchemaVersion is the JSON text of meta.schema_version ("1" for a
	// conformant envelope; a string value is taken as is) → bq-schema-version.
	SchemaVersion string
	// SourceLang is meta.lang → bq-source-lang.
	SourceLang string
	// Attempts is attempts in decimal, set only when the body holds a plain
	// integer between 0 and MaxAttemptsValue → bq-attempts.
	Attempts string
	// CreatedAt is meta.created_at in Unix milliseconds, valid when
	// HasCreatedAt (Kafka mirrors it in the record timestamp).
	CreatedAt    int64
	HasCreatedAt bool
}

// ProjectBody reads the contract fields of body without applying the
// acceptance rule: a field the body lacks, or holds with the wrong type,
// stays "". A body that is not a JSON object gives the zero Projection.
// For job, a non-blank job string wins over the urn alias.
func ProjectBody(body []byte) Projection {
	return project(body, false)
}

// project is ProjectBody; with view the strings it returns view body
// wherever the JSON text is the value (ProjectString), else they are
// copies.
func project(body []byte, view bool) Projection {
	str, text := stringValue, bytesString
	if view {
		str, text = viewStringValue, viewBytes
	}
	var p Projection
	open := skipWS(body, 0)
	if open >= len(body) || body[open] != '{' {
		return p
	}
	var job, urn, meta []byte
	var m member
	it := newObjIter(body, open, 1)
	for it.nextInto(&m) {
		v := body[m.valStart:m.valEnd]
		switch string(keyBytes(body, m)) {
		case keyJob:
			job = v
		case keyURN:
			urn = v
		case keyTraceID:
			p.TraceID = str(v)
		case keyMeta:
			meta = v
		case keyAttempts:
			if n, ok := parseUint31(v); ok {
				p.Attempts = strconv.Itoa(n)
			} else {
				p.Attempts = ""
			}
		}
	}
	if it.err != nil || skipWS(body, it.end) != len(body) {
		return Projection{}
	}
	p.Job = str(job)
	if IsBlank(p.Job) {
		p.Job = str(urn)
	}
	if len(meta) > 0 && meta[0] == '{' {
		mi := newObjIter(meta, 0, 1)
		for mi.nextInto(&m) {
			v := meta[m.valStart:m.valEnd]
			switch string(keyBytes(meta, m)) {
			case "id":
				p.MessageID = str(v)
			case "schema_version":
				switch v[0] {
				case '"':
					p.SchemaVersion = str(v)
				case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
					p.SchemaVersion = text(v)
				default:
					p.SchemaVersion = ""
				}
			case "lang":
				p.SourceLang = str(v)
			case "created_at":
				p.CreatedAt, p.HasCreatedAt = parseInt64(v)
			}
		}
	}
	return p
}

// Headers returns the contract headers of p in the order bq-job,
// bq-trace-id, bq-message-id, bq-schema-version, bq-source-lang,
// bq-attempts. A blank value is left out.
func (p Projection) Headers() []Header { return p.AppendHeaders(make([]Header, 0, 6)) }

// AppendHeaders appends Headers() to dst and returns it; a caller's array
// spares the allocation.
func (p Projection) AppendHeaders(dst []Header) []Header {
	for _, h := range [...]Header{
		{HeaderJob, p.Job},
		{HeaderTraceID, p.TraceID},
		{HeaderMessageID, p.MessageID},
		{HeaderSchemaVersion, p.SchemaVersion},
		{HeaderSourceLang, p.SourceLang},
		{HeaderAttempts, p.Attempts},
	} {
		if !IsBlank(h.Value) {
			dst = append(dst, h)
		}
	}
	return dst
}
