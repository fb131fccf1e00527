// Package corebinding runs the conformance suite against package babelqueue
// (the core module): its envelope codec, dead-letter shaping and the pure
// contract rules that every broker binding builds on.
package corebinding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/babelqueue/babelqueue-go/conformance"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Binding is the core binding. Its zero value is ready to use.
type Binding struct{}

// New returns the core binding.
func New() Binding { return Binding{} }

// Compile-time proof of every capability the core binding implements.
var (
	_ conformance.EnvelopeDecoder      = Binding{}
	_ conformance.EnvelopeProducer     = Binding{}
	_ conformance.RoundTripper         = Binding{}
	_ conformance.KafkaProjector       = Binding{}
	_ conformance.PulsarProjector      = Binding{}
	_ conformance.KafkaReconciler      = Binding{}
	_ conformance.PulsarReconciler     = Binding{}
	_ conformance.KafkaVersionGate     = Binding{}
	_ conformance.PulsarVersionGate    = Binding{}
	_ conformance.BlankRule            = Binding{}
	_ conformance.AttemptsHeaderParser = Binding{}
	_ conformance.Classifier           = Binding{}
	_ conformance.AttemptsRewriter     = Binding{}
	_ conformance.DeadLetterShaper     = Binding{}
	_ conformance.PoisonShaper         = Binding{}
	_ conformance.DeadLetterClearer    = Binding{}
	_ conformance.AttemptsDecider      = Binding{}
	_ conformance.HeaderMerger         = Binding{}
	_ conformance.Explainer            = Binding{}
)

// NotImplemented says why core skips a block: the Kafka and Pulsar binding
// blocks exercise a broker transport's own code, which the kafka and
// pulsar columns of the matrix run.
func (Binding) NotImplemented(block string) string {
	switch conformance.BlockBroker(block) {
	case "kafka":
		return "Kafka transport code: see kafka"
	case "pulsar":
		return "Pulsar transport code: see pulsar"
	}
	return ""
}

// Name returns "core".
func (Binding) Name() string { return "core" }

// DecodeEnvelope decodes body with babelqueue.Decode.
func (Binding) DecodeEnvelope(body []byte) (*conformance.Decoded, error) {
	env, err := babelqueue.Decode(body)
	if err != nil {
		return nil, err
	}
	d := &conformance.Decoded{
		URN:           env.URN(),
		TraceID:       env.TraceID,
		MetaID:        env.Meta.ID,
		CreatedAt:     env.Meta.CreatedAt,
		Data:          env.Data(),
		Attempts:      env.Attempts,
		Lang:          env.Meta.Lang,
		SchemaVersion: env.Meta.SchemaVersion,
	}
	if dl := env.DeadLetter; dl != nil {
		d.DeadLetter = &conformance.DeadLetterInfo{Reason: dl.Reason, OriginalQueue: dl.OriginalQueue}
	}
	return d, nil
}

// ProduceEnvelope builds an envelope with babelqueue.Make and encodes it.
func (Binding) ProduceEnvelope(urn, queue string, data json.RawMessage) ([]byte, error) {
	env, err := babelqueue.Make(urn, data, babelqueue.WithQueue(queue))
	if err != nil {
		return nil, err
	}
	return env.Encode()
}

var _ conformance.EnvelopeWriter = Binding{}

// WriteEnvelope builds the envelope with babelqueue.Make (data as a map)
// and encodes it.
func (Binding) WriteEnvelope(_ context.Context, in conformance.NewEnvelope) ([]byte, error) {
	data, err := in.DataMap()
	if err != nil {
		return nil, err
	}
	env, err := babelqueue.Make(in.URN, data, babelqueue.WithQueue(in.Queue), babelqueue.WithTraceID(in.TraceID),
		babelqueue.WithID(in.ID), babelqueue.WithCreatedAt(time.UnixMilli(in.CreatedAt)))
	if err != nil {
		return nil, err
	}
	return env.Encode()
}

// IncrementAttempts decodes body, adds one to Attempts and encodes it.
func (Binding) IncrementAttempts(body []byte) ([]byte, error) {
	env, err := babelqueue.Decode(body)
	if err != nil {
		return nil, err
	}
	env.Attempts++
	return env.Encode()
}

// KafkaHeaders returns the CONTRACT.md 6 header projection of body.
func (Binding) KafkaHeaders(body []byte) ([]conformance.Header, error) {
	return toHeaders(wire.ProjectBody(body).Headers()), nil
}

// PulsarProperties returns the CONTRACT.md 5 property projection of body.
func (Binding) PulsarProperties(body []byte) (map[string]string, error) {
	props := map[string]string{}
	for _, h := range wire.ProjectBody(body).Headers() {
		if _, dup := props[h.Key]; dup {
			return nil, fmt.Errorf("property %s projected twice", h.Key)
		}
		props[h.Key] = h.Value
	}
	return props, nil
}

// ReconcileKafka applies wire.ReconcileKafka.
func (Binding) ReconcileKafka(bodyAttempts int, header string, present bool) int {
	return wire.ReconcileKafka(bodyAttempts, header, present)
}

// ReconcilePulsar applies wire.ReconcilePulsar.
func (Binding) ReconcilePulsar(bodyAttempts int, property string, present bool, redeliveryCount int) int {
	return wire.ReconcilePulsar(bodyAttempts, property, present, redeliveryCount)
}

// AdmitKafka applies the version gate to the header and then the
// acceptance rule to body, as a consumer does.
func (Binding) AdmitKafka(value string, present bool, body []byte) bool {
	return admit(value, present, body)
}

// AdmitPulsar is AdmitKafka for the bq-schema-version property.
func (Binding) AdmitPulsar(value string, present bool, body []byte) bool {
	return admit(value, present, body)
}

func admit(value string, present bool, body []byte) bool {
	if err := wire.CheckSchemaVersionHeader(value, present); err != nil {
		if !errors.Is(err, babelqueue.ErrUnsupportedSchemaVersion) {
			panic(fmt.Sprintf("version gate error does not wrap ErrUnsupportedSchemaVersion: %v", err))
		}
		return false
	}
	return wire.Accepts(body) == nil
}

// IsBlank applies wire.IsBlank.
func (Binding) IsBlank(s string) bool { return wire.IsBlank(s) }

// ParseAttemptsHeader applies wire.ParseAttemptsHeader.
func (Binding) ParseAttemptsHeader(raw string) (int, bool) {
	return wire.ParseAttemptsHeader(raw)
}

// ClassifyBody applies wire.ClassifyBody, checking that its error
// matches the class with errors.Is.
func (Binding) ClassifyBody(body []byte) conformance.Class {
	class, err := wire.ClassifyBody(body)
	switch class {
	case wire.ClassAccepted:
		if err != nil {
			return conformance.Class("accepted with error " + strconv.Quote(err.Error()))
		}
		return conformance.ClassAccepted
	case wire.ClassPoison:
		if !errors.Is(err, babelqueue.ErrPoison) {
			return conformance.Class(fmt.Sprintf("poison without ErrPoison (%v)", err))
		}
		return conformance.ClassPoison
	case wire.ClassUnsupportedVersion:
		if !errors.Is(err, babelqueue.ErrUnsupportedSchemaVersion) {
			return conformance.Class(fmt.Sprintf("unsupported_version without ErrUnsupportedSchemaVersion (%v)", err))
		}
		return conformance.ClassUnsupportedVersion
	}
	return conformance.Class(class.String())
}

// SetAttempts applies wire.SetAttempts.
func (Binding) SetAttempts(body []byte, n int) ([]byte, error) {
	return wire.SetAttempts(body, n)
}

// AnnotateDeadLetter applies wire.AnnotateDeadLetter.
func (Binding) AnnotateDeadLetter(body []byte, dl conformance.DeadLetter) ([]byte, error) {
	return wire.AnnotateDeadLetter(body, coreDeadLetter(dl))
}

// PoisonBody applies wire.PoisonBody.
func (Binding) PoisonBody(body []byte, dl conformance.DeadLetter) []byte {
	return wire.PoisonBody(body, coreDeadLetter(dl))
}

// ClearDeadLetter applies wire.ClearDeadLetter.
func (Binding) ClearDeadLetter(body []byte) ([]byte, error) {
	return wire.ClearDeadLetter(body)
}

// DecideAttempts applies wire.Decide.
func (Binding) DecideAttempts(reconciled, maxAttempts int, deadLetter bool) (string, int) {
	d := wire.Decide(reconciled, maxAttempts, deadLetter)
	return d.Action.String(), d.Counted
}

// MergeHeaders applies wire.MergeHeaders.
func (Binding) MergeHeaders(contract []conformance.Header, extra map[string]string) []conformance.Header {
	in := make([]wire.Header, len(contract))
	for i, h := range contract {
		in[i] = wire.Header{Key: h.Key, Value: h.Value}
	}
	return toHeaders(wire.MergeHeaders(in, extra))
}

func toHeaders(hs []wire.Header) []conformance.Header {
	out := make([]conformance.Header, len(hs))
	for i, h := range hs {
		out[i] = conformance.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

func coreDeadLetter(dl conformance.DeadLetter) wire.DeadLetter {
	return wire.DeadLetter{
		Reason:        dl.Reason,
		Error:         dl.Error,
		Exception:     dl.Exception,
		FailedAt:      dl.FailedAt,
		OriginalQueue: dl.OriginalQueue,
		Attempts:      dl.Attempts,
		Lang:          dl.Lang,
	}
}

// SwapPoisonBlock returns the poison record rec with its dead_letter block
// replaced by dl's, once that block is checked to be the App's.
//
// It lets a transport binding run "babelqueue_go.poison_shape" through its
// App: rec is the dead letter the App wrote for a poison body consumed from
// queue at the clock time dl.FailedAt, on its first delivery. The App
// writes its own error and exception, so its block (the record's last
// member) must say poison, queue, dl.FailedAt, one attempt and lang go; it
// is replaced by dl's block as core writes it, and every other byte of rec
// is returned as it is.
func SwapPoisonBlock(rec []byte, queue string, dl conformance.DeadLetter) ([]byte, error) {
	got, ok := wire.DeadLetterOf(rec)
	if !ok || got.Reason != wire.ReasonPoison || got.OriginalQueue != queue || got.FailedAt != dl.FailedAt || got.Attempts != 1 || got.Lang != wire.Lang {
		return nil, fmt.Errorf("the App's poison block is %+v (found %v) in %s", got, ok, rec)
	}
	// A quote inside a JSON string is escaped, so this key text cannot
	// occur inside one: its last occurrence starts the last member.
	key := []byte(`"dead_letter":`)
	at := bytes.LastIndex(rec, key)
	if at < 0 || rec[len(rec)-1] != '}' {
		return nil, fmt.Errorf("no dead_letter member at the end of %s", rec)
	}
	block := wire.PoisonBody([]byte("{}"), coreDeadLetter(dl)) // {"dead_letter":<block>}
	out := append([]byte(nil), rec[:at+len(key)]...)
	out = append(out, block[len(`{"dead_letter":`):len(block)-1]...)
	return append(out, '}'), nil
}
