package babelqueue

import (
	"context"
	"maps"
)

type headersKey struct{}

// ContextWithHeaders returns a copy of ctx carrying headers as the
// out-of-band headers of the message being handled. The App does this for
// every delivery; tests of a handler can use it to run the handler as if a
// message with those headers had been delivered. headers is copied.
func ContextWithHeaders(ctx context.Context, headers map[string]string) context.Context {
	return context.WithValue(ctx, headersKey{}, &headerView{m: maps.Clone(headers)})
}

// deliveredContext is the handler context of one App delivery:
// ContextWithHeaders for the App's own deliveries, allocated with the
// delivery's Envelope (see delivery) instead of on its own. It holds the
// delivered map itself, or the binding's source of deferred headers, not a
// copy. That is safe because neither the App nor a transport changes
// delivered headers, and every reader below copies or only looks.
type deliveredContext struct {
	context.Context
	headers headerView
}

// Value returns the delivered headers for headersKey, else the parent's
// value.
func (c *deliveredContext) Value(key any) any {
	if _, ok := key.(headersKey); ok {
		return &c.headers
	}
	return c.Context.Value(key)
}

// HeadersFromContext returns a copy of the out-of-band headers delivered
// with the message being handled (contract bq- headers included), or nil
// outside a handler.
func HeadersFromContext(ctx context.Context) map[string]string {
	h, _ := ctx.Value(headersKey{}).(*headerView)
	return h.clone()
}

// IsReplay reports whether the message being handled is a replay: it was
// redriven with the replay bypass (see WithRedriveReplayBypass), which
// shows as a bq-replay-bypass header that is present and not blank.
func IsReplay(ctx context.Context) bool {
	h, _ := ctx.Value(headersKey{}).(*headerView)
	v, ok := h.lookup(HeaderReplayBypass)
	return ok && !IsBlank(v)
}

// BypassExternalEffects runs fn and returns its error, unless the message
// being handled is a replay (IsReplay), in which case fn is skipped and it
// returns nil. Wrap in it the effects a replay must not repeat: charging a
// card, sending an e-mail, calling a partner's API.
func BypassExternalEffects(ctx context.Context, fn func() error) error {
	if IsReplay(ctx) {
		return nil
	}
	return fn()
}
