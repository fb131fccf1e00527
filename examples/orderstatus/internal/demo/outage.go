package demo

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
)

// outageStore is a Store whose Apply fails as unavailable while the demo
// holds it down, standing in for a database that went away for a while.
type outageStore struct {
	orderstatus.Store
	down    atomic.Bool
	refused atomic.Int64
}

func (s *outageStore) Apply(ctx context.Context, e orderstatus.Event) (orderstatus.Applied, error) {
	if s.down.Load() {
		s.refused.Add(1)
		return 0, fmt.Errorf("%w: the database is not answering (outage simulated by the demo)", orderstatus.ErrUnavailable)
	}
	return s.Store.Apply(ctx, e)
}
