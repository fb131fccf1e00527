package driver

import (
	"unsafe"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// known is a projection of a body given by whoever made it, with the body
// it belongs to.
type known struct {
	p    wire.Projection
	body string
}

// SetProjection records p as the projection of out.Body, so that a binding
// need not parse the body again. The App sets it for an envelope it just
// encoded (wire.ProjectFresh). p must equal wire.ProjectBody(out.Body).
func SetProjection(out *Outgoing, p wire.Projection) {
	out.proj = known{p: p, body: out.Body}
}

// Projection returns the contract projection of out.Body. That is the one
// given by SetProjection while Body is still the body it was given for,
// else wire.ProjectString of it, whose strings share the memory of Body.
func (out *Outgoing) Projection() wire.Projection {
	if b := out.proj.body; len(b) == len(out.Body) && len(b) > 0 && unsafe.StringData(b) == unsafe.StringData(out.Body) {
		return out.proj.p
	}
	return wire.ProjectString(out.Body)
}
