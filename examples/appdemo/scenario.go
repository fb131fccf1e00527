package appdemo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// The URNs of the demo: orders are handled; refunds have no handler, so
// they fail as unknown_urn (the App's default strategy) and end in the DLQ.
const (
	urnOrderCreated  = "urn:babel:orders:created"
	urnRefundCreated = "urn:babel:refunds:created"
)

// Kinds of order the handler meets.
const (
	kindOK     = "ok"     // handled on the first delivery
	kindFlaky  = "flaky"  // fails twice (a flaky payment service), handled on the third delivery, after both tiers
	kindBroken = "broken" // fails on every delivery until the operator fixes it: dead-lettered
)

// order is one message the demo publishes.
type order struct {
	ID   string
	URN  string
	Kind string
	// Fixed: the operator fixes the cause before the redrive, so the
	// redriven copy is handled.
	Fixed bool
}

// script is the demo's traffic: 13 messages, every path of the App.
func script() []order {
	var out []order
	for i := 1; i <= 6; i++ {
		out = append(out, order{ID: fmt.Sprintf("ord-%02d", i), URN: urnOrderCreated, Kind: kindOK})
	}
	for i := 7; i <= 9; i++ {
		out = append(out, order{ID: fmt.Sprintf("ord-%02d", i), URN: urnOrderCreated, Kind: kindFlaky})
	}
	out = append(out,
		order{ID: "ord-10", URN: urnOrderCreated, Kind: kindBroken, Fixed: true},
		order{ID: "ord-11", URN: urnOrderCreated, Kind: kindBroken, Fixed: true},
		order{ID: "ord-12", URN: urnOrderCreated, Kind: kindBroken},
		order{ID: "ref-13", URN: urnRefundCreated, Kind: kindOK},
	)
	return out
}

// errPaymentDown and errAddressInvalid are the handler's failures.
var (
	errPaymentDown    = errors.New("payment service unavailable")
	errAddressInvalid = errors.New("shipping address rejected by the carrier")
)

// handler is the order handler: it fails as each order's kind says and,
// on success, writes the message's meta.id to the results topic, which
// the final accounting reads back.
type handler struct {
	publish func(ctx context.Context, id string) error
	mu      sync.Mutex
	fixed   map[string]bool // orders whose cause the operator fixed
}

func (h *handler) fix(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fixed[id] = true
}

func (h *handler) handle(ctx context.Context, env *babelqueue.Envelope) error {
	data, err := env.DataMap()
	if err != nil {
		return err
	}
	id, _ := data["order_id"].(string)
	kind, _ := data["kind"].(string)
	switch kind {
	case kindFlaky:
		if env.Attempts < 2 {
			return errPaymentDown
		}
	case kindBroken:
		h.mu.Lock()
		fixed := h.fixed[id]
		h.mu.Unlock()
		if !fixed {
			return errAddressInvalid
		}
	}
	return h.publish(ctx, env.Meta.ID)
}
