package orderstatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// The URNs of the order events, one per status an order can reach.
const (
	URNCreated   = "urn:babel:orders:created"
	URNPaid      = "urn:babel:orders:paid"
	URNShipped   = "urn:babel:orders:shipped"
	URNDelivered = "urn:babel:orders:delivered"
	URNCancelled = "urn:babel:orders:cancelled"
)

// The reasons a record is retried or dead-lettered, as written in the
// retry.reason and dlq.reason headers and the orderstatus.reason attribute.
const (
	ReasonMalformed         = "malformed"
	ReasonUnknownType       = "unknown-type"
	ReasonInvalidTransition = "invalid-transition"
	ReasonUnavailable       = "unavailable"
)

// ErrUnknownType marks an envelope whose URN is not an order event.
var ErrUnknownType = errors.New("orderstatus: unknown event type")

// ErrMalformed marks a record that is not an order event envelope.
var ErrMalformed = errors.New("orderstatus: malformed record")

var statusOf = map[string]Status{
	URNCreated:   StatusCreated,
	URNPaid:      StatusPaid,
	URNShipped:   StatusShipped,
	URNDelivered: StatusDelivered,
	URNCancelled: StatusCancelled,
}

// URNFor returns the event URN that moves an order to status s.
func URNFor(s Status) string {
	for urn, st := range statusOf {
		if st == s {
			return urn
		}
	}
	return ""
}

// Event is a decoded order event.
type Event struct {
	// ID is the envelope's meta.id, the event's idempotency key.
	ID string
	// OrderID is data.order_id (a JSON string or integer, kept as text).
	OrderID string
	// Status is the status the event moves the order to.
	Status Status
	// URN is the envelope's job.
	URN string
	// CreatedAt is meta.created_at, the zero time when absent.
	CreatedAt time.Time
}

// DecodeEvent reads a record value as an order event. It returns the reason
// and an error when the value is not one: ReasonMalformed (wrapping
// ErrMalformed, and the codec's babelqueue.ErrPoison or
// babelqueue.ErrUnsupportedSchemaVersion when it refused the body) for a value
// that is not an envelope, has a blank meta.id or no usable data.order_id;
// ReasonUnknownType (wrapping ErrUnknownType) for an envelope of another URN.
func DecodeEvent(value []byte) (Event, string, error) {
	env, err := babelqueue.Decode(value)
	if err != nil {
		return Event{}, ReasonMalformed, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	status, ok := statusOf[env.URN()]
	if !ok {
		return Event{}, ReasonUnknownType, fmt.Errorf("%w: %q", ErrUnknownType, env.URN())
	}
	if wire.IsBlank(env.Meta.ID) {
		return Event{}, ReasonMalformed, fmt.Errorf("%w: %s has no meta.id", ErrMalformed, env.URN())
	}
	var data struct {
		OrderID json.RawMessage `json:"order_id"`
	}
	if err := env.BindData(&data); err != nil {
		return Event{}, ReasonMalformed, fmt.Errorf("%w: %s data: %w", ErrMalformed, env.URN(), err)
	}
	orderID, err := orderIDText(data.OrderID)
	if err != nil {
		return Event{}, ReasonMalformed, fmt.Errorf("%w: %s data.order_id: %w", ErrMalformed, env.URN(), err)
	}
	e := Event{ID: env.Meta.ID, OrderID: orderID, Status: status, URN: env.URN()}
	if env.Meta.CreatedAt > 0 {
		e.CreatedAt = time.UnixMilli(env.Meta.CreatedAt).UTC()
	}
	return e, "", nil
}

// orderIDText accepts a non-blank JSON string or a JSON integer.
func orderIDText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("it is missing")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if wire.IsBlank(s) {
			return "", errors.New("it is blank")
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil || strings.ContainsAny(n.String(), ".eE-+") {
		return "", fmt.Errorf("%s is neither a string nor a non-negative integer", raw)
	}
	return n.String(), nil
}
