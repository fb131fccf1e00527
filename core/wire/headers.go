package wire

import (
	"sort"
	"strings"
)

// Contract names of Kafka headers and Pulsar properties.
const (
	HeaderJob           = "bq-job"
	HeaderTraceID       = "bq-trace-id"
	HeaderMessageID     = "bq-message-id"
	HeaderSchemaVersion = "bq-schema-version"
	HeaderSourceLang    = "bq-source-lang"
	HeaderAttempts      = "bq-attempts"
	// HeaderDelay and HeaderOriginalTopic are set on Kafka retry-tier records.
	HeaderDelay         = "bq-delay"
	HeaderOriginalTopic = "bq-original-topic"
	// HeaderReplayBypass marks a redriven message (see IsReplay).
	HeaderReplayBypass = "bq-replay-bypass"
	// HeaderTraceparent and HeaderTracestate are the W3C trace context headers.
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// ContractHeaderPrefix starts every header name the contract reserves.
const ContractHeaderPrefix = "bq-"

// IsContractHeader reports whether key is reserved by the contract.
func IsContractHeader(key string) bool { return strings.HasPrefix(key, ContractHeaderPrefix) }

// Header is one out-of-band header or property.
type Header struct {
	Key   string
	Value string
}

// MergeHeaders returns contract followed by the non-blank entries of extra,
// in key order; the contract wins a collision. An entry is blank when its
// key or its value is. contract itself is kept as given.
func MergeHeaders(contract []Header, extra map[string]string) []Header {
	if len(extra) == 0 {
		return contract
	}
	keys := make([]string, 0, len(extra))
	for k, v := range extra {
		if IsBlank(k) || IsBlank(v) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Header, 0, len(contract)+len(keys))
	out = append(out, contract...)
	for _, k := range keys {
		dup := false
		for _, h := range contract {
			if h.Key == k {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, Header{Key: k, Value: extra[k]})
		}
	}
	return out
}

// HeaderRedriveCount counts how many times a message was redriven. A redrive
// writes it, incremented, on every moved copy; the replay-count guard
// (redrive.WithMaxRedrives) reads it.
const HeaderRedriveCount = "bq-redrive-count"

// HeaderRedriveSource names the dead letter a redriven copy came from (a
// binding-specific position such as "<dlq>/<partition>/<offset>"). A
// binding that can be interrupted between a write and its settlement uses
// it to recognise a copy it already wrote.
const HeaderRedriveSource = "bq-redrive-source"
