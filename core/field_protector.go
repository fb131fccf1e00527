package babelqueue

import (
	"bytes"
	"context"
	"fmt"

	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// WithFieldProtector makes the App encrypt sensitive data fields on
// publish and decrypt them before the handler runs. gdpr.Protector, fed
// by the schema module's x-gdpr-sensitive marks, is a FieldProtector.
//
// Publish (and PublishBatch) validate the cleartext with the
// PayloadValidator first, then write the data p.ProtectFields returns; an
// error of p fails the publish, nothing written. On consume, after
// routing and before validation, the handler gets an envelope whose data
// is what p.UnprotectFields returns; the received bytes, and so every
// retry, dead letter and redrive of the message, keep the ciphertext. A
// message p cannot decrypt never reaches its handler: it is retried and,
// after its last attempt, dead-lettered, both with Settlement.Reason (and
// dead_letter.reason) wire.ReasonDecryptFailed and an error matching
// ErrDecryptFailed. A nil protector is rejected.
func WithFieldProtector(p gdpr.FieldProtector) Option {
	return func(c *config) {
		if p == nil {
			c.fail("field protector is nil")
			return
		}
		c.protector = p
	}
}

// envelopeProtector is a FieldProtector that edits an envelope's data in
// place of a copy (gdpr.Protector): the App prefers it.
type envelopeProtector interface {
	ProtectEnvelope(urn string, env *Envelope) (*Envelope, error)
	UnprotectEnvelope(urn string, env *Envelope) (*Envelope, error)
}

// protectOutgoing returns env with its sensitive fields encrypted (env
// itself without a protector or when nothing changed).
func (a *App) protectOutgoing(urn string, env *Envelope) (*Envelope, error) {
	p := a.cfg.protector
	if p == nil {
		return env, nil
	}
	if ep, ok := p.(envelopeProtector); ok {
		out, err := ep.ProtectEnvelope(urn, env)
		if err != nil {
			return nil, fmt.Errorf("protecting the fields of %s: %w", urn, err)
		}
		return out, nil
	}
	data := env.Data()
	out, err := p.ProtectFields(urn, data)
	if err != nil {
		return nil, fmt.Errorf("protecting the fields of %s: %w", urn, err)
	}
	if bytes.Equal(out, data) {
		return env, nil
	}
	return env.WithData(out)
}

// decryptFailedError is a message the FieldProtector could not decrypt.
type decryptFailedError struct {
	urn string
	err error
}

func (e *decryptFailedError) Error() string {
	return fmt.Sprintf("protected fields of %s: %v", e.urn, e.err)
}

func (e *decryptFailedError) Unwrap() []error { return []error{ErrDecryptFailed, e.err} }

// unprotectIncoming returns the envelope the handler gets: env with its
// sensitive fields decrypted. ok is false when a field could not be
// decrypted; out is then the settled delivery.
func (a *App) unprotectIncoming(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string) (henv *Envelope, out outcome, ok bool) {
	p := a.cfg.protector
	if p == nil {
		return env, outcome{}, true
	}
	var err error
	if ep, ok := p.(envelopeProtector); ok {
		henv, err = ep.UnprotectEnvelope(route, env)
	} else {
		data := env.Data()
		var clear []byte
		if clear, err = p.UnprotectFields(route, data); err == nil {
			henv = env
			if !bytes.Equal(clear, data) {
				henv, err = env.WithData(clear)
			}
		}
	}
	if err == nil {
		return henv, outcome{}, true
	}
	cause := &decryptFailedError{urn: route, err: err}
	a.reportError(ctx, "babelqueue: protected fields cannot be decrypted", a.deliveryErr(msg, env, route, cause), a.attrs(msg, env, route)...)
	return nil, a.settleRetryable(ctx, msg, env, route, wire.ReasonDecryptFailed, cause), false
}
