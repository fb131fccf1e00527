package babelqueue

import (
	"context"
	"maps"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// headersKey is the context key of the delivered message: the one
// driver.DeliveredContext, the handler context of the App's deliveries,
// answers.
type headersKey = driver.MessageContextKey

// ContextWithHeaders returns a copy of ctx carrying headers as the
// out-of-band headers of the message being handled. The App does this for
// every delivery; tests of a handler can use it to run the handler as if a
// message with those headers had been delivered. headers is copied.
func ContextWithHeaders(ctx context.Context, headers map[string]string) context.Context {
	return context.WithValue(ctx, headersKey{}, &driver.ReceivedMessage{Headers: maps.Clone(headers)})
}

// HeadersFromContext returns a copy of the out-of-band headers delivered
// with the message being handled (contract bq- headers included), or nil
// outside a handler.
func HeadersFromContext(ctx context.Context) map[string]string {
	m, _ := ctx.Value(headersKey{}).(*driver.ReceivedMessage)
	return m.CloneHeaders()
}

// IsReplay reports whether the message being handled was redriven with the
// replay bypass (see redrive.WithReplayBypass). That shows as a
// bq-replay-bypass header that is present and not blank.
func IsReplay(ctx context.Context) bool {
	m, _ := ctx.Value(headersKey{}).(*driver.ReceivedMessage)
	v, ok := m.Header(wire.HeaderReplayBypass)
	return ok && !wire.IsBlank(v)
}

// BypassExternalEffects runs fn and returns its error, unless the message
// being handled is a replay: then fn is skipped and it returns nil (see
// IsReplay). Wrap in it the effects a replay must not repeat: charging a
// card, sending an e-mail, calling a partner's API.
func BypassExternalEffects(ctx context.Context, fn func() error) error {
	if IsReplay(ctx) {
		return nil
	}
	return fn()
}
