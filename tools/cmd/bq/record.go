package main

import (
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// record is one broker message as the inspection commands see it.
type record struct {
	Topic     string
	Partition int
	Offset    int64
	// MessageID is the Pulsar message id (empty on Kafka).
	MessageID string
	Time      time.Time
	Key       []byte
	Headers   []wire.Header
	Value     []byte
}

// header returns the value of the last header named key.
func (r *record) header(key string) (string, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return r.Headers[i].Value, true
		}
	}
	return "", false
}

// deadLetterView is the dead_letter block in JSON output, with the wire
// names of CONTRACT.md 4.1.
type deadLetterView struct {
	Reason        string  `json:"reason"`
	Error         *string `json:"error"`
	Exception     *string `json:"exception"`
	FailedAt      int64   `json:"failed_at"`
	OriginalQueue string  `json:"original_queue"`
	Attempts      int     `json:"attempts"`
	Lang          string  `json:"lang"`
}

func viewDeadLetter(dl *wire.DeadLetter) *deadLetterView {
	if dl == nil {
		return nil
	}
	return &deadLetterView{dl.Reason, dl.Error, dl.Exception, dl.FailedAt, dl.OriginalQueue, dl.Attempts, dl.Lang}
}

// headerView is one header in JSON output (a list keeps order and
// repeated keys).
type headerView struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// recordView is a record prepared for output: the envelope as JSON when
// the body is JSON, else the body as text or base64.
type recordView struct {
	Topic       string          `json:"topic"`
	Partition   *int            `json:"partition,omitempty"`
	Offset      *int64          `json:"offset,omitempty"`
	MessageID   string          `json:"message_id,omitempty"`
	Time        time.Time       `json:"time"`
	Key         string          `json:"key,omitempty"`
	Headers     []headerView    `json:"headers"`
	URN         string          `json:"urn,omitempty"`
	ID          string          `json:"id,omitempty"`
	Envelope    json.RawMessage `json:"envelope,omitempty"`
	Body        string          `json:"body,omitempty"`
	BodyBase64  string          `json:"body_base64,omitempty"`
	DecodeError string          `json:"decode_error,omitempty"`
	DeadLetter  *deadLetterView `json:"dead_letter,omitempty"`
}

// view builds the output form of r.
func (r *record) view() recordView {
	v := recordView{Topic: r.Topic, MessageID: r.MessageID, Time: r.Time.UTC(), Headers: []headerView{}}
	if r.MessageID == "" {
		p, o := r.Partition, r.Offset
		v.Partition, v.Offset = &p, &o
	}
	if len(r.Key) > 0 {
		if utf8.Valid(r.Key) {
			v.Key = string(r.Key)
		} else {
			v.Key = "base64:" + base64.StdEncoding.EncodeToString(r.Key)
		}
	}
	for _, h := range r.Headers {
		v.Headers = append(v.Headers, headerView(h))
	}
	if env, err := babelqueue.Decode(r.Value); err == nil {
		v.URN, v.ID = env.URN(), env.Meta.ID
	} else {
		v.DecodeError = err.Error()
	}
	if json.Valid(r.Value) {
		v.Envelope = json.RawMessage(r.Value)
	} else if utf8.Valid(r.Value) {
		v.Body = string(r.Value)
	} else {
		v.BodyBase64 = base64.StdEncoding.EncodeToString(r.Value)
	}
	if dl, ok := wire.DeadLetterOf(r.Value); ok {
		v.DeadLetter = viewDeadLetter(dl)
	}
	return v
}
