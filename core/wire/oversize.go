package wire

import "unicode/utf8"

// ReasonOversize is the dead_letter.reason and Settlement.Reason of a
// bounded dead letter. The broker refused the message's retry copy or dead
// letter as larger than it ever accepts, so a small record naming the
// original took its place. The original stays in its topic.
const ReasonOversize = "oversize"

// MaxOversizeText is the longest text, in bytes, a bounded dead letter
// keeps of each string it holds, such as the URN, ids and errors. Longer
// text is cut at a character boundary and ends in "…". It bounds the record
// to a few KiB.
const MaxOversizeText = 2048

// Oversize describes the original message of a bounded dead letter and why
// its full copy could not be written.
type Oversize struct {
	// URN, ID and TraceID are the message's job, meta.id and trace_id;
	// empty when unknown (a poison body), and then left out.
	URN, ID, TraceID string
	// Reason is why the message was being retried or dead-lettered
	// (ReasonFailed, ReasonPoison, ...).
	Reason string
	// WriteError is the broker's (or client's) refusal of the full copy.
	WriteError string
	// Size is the size of the original body in bytes; RefusedSize that of
	// the refused copy.
	Size, RefusedSize int
	// Topic is where the original is stored. A Kafka original is named by
	// Partition and Offset; a Pulsar one by MessageID, and then Partition
	// and Offset are left out.
	Topic     string
	Partition int32
	Offset    int64
	MessageID string
}

// OversizeBody returns the bounded dead letter of o (see ReasonOversize). Its
// shape, keys in this order, fields of o left out when empty as noted:
//
//	{"job":…,"trace_id":…,"meta":{"id":…},
//	 "oversize":{"reason":…,"write_error":…,"size":…,"refused_size":…,
//	             "topic":…,"partition":…,"offset":…|"message_id":…},
//	 "dead_letter":{"reason":"oversize","error":…,"exception":…,
//	                "failed_at":…,"original_queue":…,"attempts":…,"lang":"go"}}
//
// It is not an envelope (no data): a redrive leaves it where it is, as it
// does any undecodable dead letter. dl.Reason is forced to ReasonOversize;
// every string is cut to MaxOversizeText bytes.
func OversizeBody(o Oversize, dl DeadLetter) []byte {
	dl.Reason = ReasonOversize
	dl.Error = boundedPtr(dl.Error)
	dl.Exception = boundedPtr(dl.Exception)
	dl.OriginalQueue = bounded(dl.OriginalQueue)
	out := make([]byte, 0, 512)
	out = append(out, '{')
	sep := false
	member := func(key string) {
		if sep {
			out = append(out, ',')
		}
		sep = true
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, `":`...)
	}
	if o.URN != "" {
		member("job")
		out = appendJSONString(out, bounded(o.URN))
	}
	if o.TraceID != "" {
		member("trace_id")
		out = appendJSONString(out, bounded(o.TraceID))
	}
	if o.ID != "" {
		member("meta")
		out = append(out, `{"id":`...)
		out = appendJSONString(out, bounded(o.ID))
		out = append(out, '}')
	}
	member("oversize")
	out = append(out, `{"reason":`...)
	out = appendJSONString(out, bounded(o.Reason))
	out = append(out, `,"write_error":`...)
	out = appendJSONString(out, bounded(o.WriteError))
	out = append(out, `,"size":`...)
	out = appendInt(out, int64(o.Size))
	out = append(out, `,"refused_size":`...)
	out = appendInt(out, int64(o.RefusedSize))
	out = append(out, `,"topic":`...)
	out = appendJSONString(out, bounded(o.Topic))
	if o.MessageID != "" {
		out = append(out, `,"message_id":`...)
		out = appendJSONString(out, bounded(o.MessageID))
	} else {
		out = append(out, `,"partition":`...)
		out = appendInt(out, int64(o.Partition))
		out = append(out, `,"offset":`...)
		out = appendInt(out, o.Offset)
	}
	out = append(out, '}')
	member("dead_letter")
	out = appendDeadLetter(out, dl, nil)
	return append(out, '}')
}

// bounded cuts s to MaxOversizeText bytes at a character boundary, marking
// the cut with "…".
func bounded(s string) string {
	if len(s) <= MaxOversizeText {
		return s
	}
	const mark = "…"
	cut := MaxOversizeText - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func boundedPtr(s *string) *string {
	if s == nil || len(*s) <= MaxOversizeText {
		return s
	}
	b := bounded(*s)
	return &b
}
