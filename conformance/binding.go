package conformance

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Binding is the one method every binding under test implements. What a
// binding can be tested for is decided by the capability interfaces below
// that it also implements.
type Binding interface {
	// Name identifies the binding in reports, for example "core" or "kafka".
	Name() string
}

// Explainer is implemented by a binding that says why it does not take part
// in a block, for the skip reason of the report (for example "Pulsar block"
// or "core rule: see core"). An empty answer falls back to the default
// reason, which names the capability the binding lacks. Explaining never
// turns a skip into a pass.
type Explainer interface {
	NotImplemented(block string) string
}

// BlockBroker names the broker a block belongs to: "kafka" for kafka.* and
// babelqueue_go.kafka_* blocks, "pulsar" for their Pulsar twins, and ""
// for every other block.
func BlockBroker(block string) string {
	for _, b := range []string{"kafka", "pulsar"} {
		if strings.HasPrefix(block, b+".") || strings.HasPrefix(block, "babelqueue_go."+b+"_") {
			return b
		}
	}
	return ""
}

// BrokerSkip is the skip reason of a broker binding's column: "Kafka block"
// or "Pulsar block" for a block of the other broker, else "core rule: see
// core" (a rule the transport takes from core unchanged).
func BrokerSkip(broker, block string) string {
	switch other := BlockBroker(block); {
	case other == "kafka" && broker != "kafka":
		return "Kafka block"
	case other == "pulsar" && broker != "pulsar":
		return "Pulsar block"
	}
	return "core rule: see core"
}

// Header is one out-of-band header (Kafka) or property (Pulsar).
type Header struct {
	Key   string
	Value string
}

// DeadLetter is the dead_letter block a shaper writes. Error and Exception
// are nil for a JSON null.
type DeadLetter struct {
	Reason        string
	Error         *string
	Exception     *string
	FailedAt      int64
	OriginalQueue string
	Attempts      int
	Lang          string
}

// DeadLetterInfo is what a decoder reports of a received dead_letter block.
type DeadLetterInfo struct {
	Reason        string
	OriginalQueue string
}

// Decoded is an accepted envelope as a binding's consumer sees it.
type Decoded struct {
	URN           string
	TraceID       string
	MetaID        string
	CreatedAt     int64
	Data          json.RawMessage // the raw JSON of data
	Attempts      int
	Lang          string
	SchemaVersion int
	DeadLetter    *DeadLetterInfo // nil when the body has no dead_letter block
}

// Class is the verdict of a body classification.
type Class string

// The classes of a received body (CONTRACT.md 2.6–2.8).
const (
	ClassAccepted           Class = "accepted"
	ClassPoison             Class = "poison"
	ClassUnsupportedVersion Class = "unsupported_version"
)

// EnvelopeDecoder runs the "cases" block and the decode cases of
// "data_shape": a non-nil error means the body is rejected.
type EnvelopeDecoder interface {
	DecodeEnvelope(body []byte) (*Decoded, error)
}

// EnvelopeProducer runs the encode cases of "data_shape": it builds a new
// envelope for urn on queue with the given data and returns its bytes.
type EnvelopeProducer interface {
	ProduceEnvelope(urn, queue string, data json.RawMessage) ([]byte, error)
}

// EnvelopeWriter runs "babelqueue_go.envelope_bytes": the exact bytes a
// producer writes for a new envelope with the fields of in.
type EnvelopeWriter interface {
	WriteEnvelope(ctx context.Context, in NewEnvelope) ([]byte, error)
}

// NewEnvelope holds the fields of a new envelope (attempts 0, meta.lang
// go, meta.schema_version 1).
type NewEnvelope struct {
	URN, Queue, TraceID, ID string
	CreatedAt               int64 // Unix milliseconds
	// Data is a JSON object; the producer writes its keys sorted.
	Data json.RawMessage
}

// RoundTripper runs the "roundtrip" block: decode body (it must be
// accepted), add one to attempts and encode it again.
type RoundTripper interface {
	IncrementAttempts(body []byte) ([]byte, error)
}

// KafkaProjector runs "kafka.property_projection" and
// "babelqueue_go.kafka_header_projection": the record headers a produce of
// body writes, in the order they are written.
type KafkaProjector interface {
	KafkaHeaders(body []byte) ([]Header, error)
}

// PulsarProjector runs "pulsar.property_projection": the message properties
// a produce of body writes.
type PulsarProjector interface {
	PulsarProperties(body []byte) (map[string]string, error)
}

// KafkaReconciler runs "kafka.attempts_reconciliation" and
// "babelqueue_go.kafka_attempts_raw". present is false for an absent header.
type KafkaReconciler interface {
	ReconcileKafka(bodyAttempts int, header string, present bool) int
}

// PulsarReconciler runs "pulsar.attempts_reconciliation" and
// "babelqueue_go.pulsar_attempts_raw".
type PulsarReconciler interface {
	ReconcilePulsar(bodyAttempts int, property string, present bool, redeliveryCount int) int
}

// KafkaVersionGate runs "kafka.schema_version_gate": it reports whether a
// record carrying body and the bq-schema-version header value (present is
// false when the header is absent) is decoded (true) or rejected undecoded
// (false).
type KafkaVersionGate interface {
	AdmitKafka(value string, present bool, body []byte) bool
}

// PulsarVersionGate runs "pulsar.schema_version_gate", like KafkaVersionGate
// for the bq-schema-version property.
type PulsarVersionGate interface {
	AdmitPulsar(value string, present bool, body []byte) bool
}

// BlankRule runs "babelqueue_go.blank".
type BlankRule interface {
	IsBlank(s string) bool
}

// AttemptsHeaderParser runs "babelqueue_go.attempts_header": the value of a
// raw bq-attempts string and whether it is valid.
type AttemptsHeaderParser interface {
	ParseAttemptsHeader(raw string) (n int, ok bool)
}

// Classifier runs "babelqueue_go.classification".
type Classifier interface {
	ClassifyBody(body []byte) Class
}

// AttemptsRewriter runs "babelqueue_go.set_attempts": body with its
// attempts set to n, every other byte unchanged.
type AttemptsRewriter interface {
	SetAttempts(body []byte, n int) ([]byte, error)
}

// DeadLetterShaper runs "babelqueue_go.dead_letter_shape": the dead-letter
// body of a failed or unknown-URN message.
type DeadLetterShaper interface {
	AnnotateDeadLetter(body []byte, dl DeadLetter) ([]byte, error)
}

// PoisonShaper runs "babelqueue_go.poison_shape": the dead-letter body of a
// poison message.
type PoisonShaper interface {
	PoisonBody(body []byte, dl DeadLetter) []byte
}

// DeadLetterClearer runs "babelqueue_go.redrive_body": the body a redrive
// writes back (dead_letter removed, attempts 0).
type DeadLetterClearer interface {
	ClearDeadLetter(body []byte) ([]byte, error)
}

// AttemptsDecider runs "babelqueue_go.max_attempts". action is "retry",
// "dead_letter" or "drop".
type AttemptsDecider interface {
	DecideAttempts(reconciled, maxAttempts int, deadLetter bool) (action string, counted int)
}

// HeaderMerger runs "babelqueue_go.header_merge": the headers a publish
// writes for the contract projection plus the caller's extra headers.
type HeaderMerger interface {
	MergeHeaders(contract []Header, extra map[string]string) []Header
}

// KafkaTierSelector runs "babelqueue_go.kafka_retry_tier": the 1-based
// tier a retry after attemptsBefore attempts goes to, and the name of tier
// n's topic.
type KafkaTierSelector interface {
	RetryTier(tiers []time.Duration, attemptsBefore int) int
	RetryTopic(topic string, n int) string
}

// KafkaDelaySelector runs "babelqueue_go.kafka_delayed_publish": the 1-based
// tier a delayed publish uses, or ok == false when no tier fits.
type KafkaDelaySelector interface {
	DelayTier(tiers []time.Duration, delay time.Duration) (n int, ok bool)
}

// KafkaReinjectRewriter runs "babelqueue_go.kafka_reinject_headers": the
// topic a retry-tier record is written back to and the headers it carries.
type KafkaReinjectRewriter interface {
	ReinjectHeaders(in []Header) (target string, out []Header)
}

// KafkaReinjectWaiter runs "babelqueue_go.kafka_reinject_wait": how long
// the re-injector holds a record of the given tier.
type KafkaReinjectWaiter interface {
	ReinjectWait(recordTime, now time.Time, tier time.Duration) time.Duration
}

// KafkaRecord is a Kafka record as written or reserved. A nil Key or Value
// is a null key or value.
type KafkaRecord struct {
	Topic   string
	Key     []byte
	Value   []byte
	Headers []Header
}

// PublishFromInput is one PublishFrom call: the reserved record it
// republishes from, the target queue and the body.
type PublishFromInput struct {
	Reserved KafkaRecord
	Queue    string
	Body     []byte
}

// KafkaRepublisher runs "babelqueue_go.kafka_publish_from": the record a
// PublishFrom call writes.
type KafkaRepublisher interface {
	PublishFromRecord(ctx context.Context, in PublishFromInput) (KafkaRecord, error)
}

// PulsarRouter runs "babelqueue_go.pulsar_routing": the URN a delivery is
// routed on and whether the mismatch hook fires.
type PulsarRouter interface {
	RoutePulsar(property string, present bool, bodyURN string) (route string, mismatch bool)
}

// GatedDelivery is one delivery of a version-gated message
// ("babelqueue_go.version_gate_settlement").
type GatedDelivery struct {
	Queue              string
	Body               []byte
	Headers            []Header
	DeadLetter         bool
	MaxAttempts        int
	RedeliveryCount    int
	UnknownURNStrategy string // fail, delete, release or dead_letter
}

// GatedOutcome is what a binding's runtime did with a GatedDelivery.
type GatedOutcome struct {
	HandlerCalled bool
	Acked         bool
	Retried       bool
	// Written lists every record written while settling, in order.
	Written []KafkaRecord
	// HookVersion is the version OnSchemaVersionRejected was called with,
	// "" when it was not called.
	HookVersion string
}

// VersionGateSettler runs "babelqueue_go.version_gate_settlement".
type VersionGateSettler interface {
	SettleVersionGated(ctx context.Context, in GatedDelivery) (GatedOutcome, error)
}
