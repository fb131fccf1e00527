package driver

import (
	"context"
	"fmt"
)

// BatchSender is an optional interface of a Transport that writes several
// messages in one hand-over to its broker client (one kafka-go
// WriteMessages, say). The App's PublishBatch uses it when the transport
// implements it, and falls back to one Send per message otherwise.
//
// SendBatch writes each Outgoing as Send would write it alone and returns
// once every write was acknowledged, with one Receipt per Outgoing, in
// order. Writes of one destination partition keep their order. On error
// it returns either SendErrors, one entry per Outgoing (nil for a write
// the broker acknowledged), or any other error, which then holds for every
// Outgoing: matching ErrPublishUnknown, none, some or all may be stored;
// else nothing was written. The receipts of a failed call may be nil.
type BatchSender interface {
	SendBatch(ctx context.Context, outs []*Outgoing) ([]Receipt, error)
}

// SendErrors is the error of a SendBatch whose writes had different
// outcomes; entry i is nil when the broker acknowledged outs[i]. Otherwise
// it is the error of that write: one matching ErrPublishUnknown may be
// stored, any other was not written.
type SendErrors []error

func (e SendErrors) Error() string {
	failed, first := 0, error(nil)
	for _, err := range e {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	return fmt.Sprintf("babelqueue: %d of %d writes failed, first: %v", failed, len(e), first)
}

// Unwrap gives the non-nil entries, so that errors.Is finds
// ErrPublishUnknown when any write may be stored.
func (e SendErrors) Unwrap() []error {
	errs := make([]error, 0, len(e))
	for _, err := range e {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
