//go:build !race

package babelqueue

import (
	"context"
	"testing"
)

// Counting allocations needs a runtime without the race detector, whose
// sync.Pool drops pooled values at random by design (it failed about one
// run in four under -race). `make integration` runs this package's tests
// without -race, so CI still runs it.

func TestPublishBatchReusesTheSlabsOfAnAcknowledgedBatch(t *testing.T) {
	allocs := func(releases bool) float64 {
		app := testApp(&releasingTransport{releases: releases}, WithDefaultQueue("orders"))
		msgs := batchOf(50)
		for i := range msgs {
			msgs[i].Options = nil
		}
		ctx := context.Background()
		return testing.AllocsPerRun(50, func() {
			if _, err := app.PublishBatch(ctx, msgs); err != nil {
				t.Fatal(err)
			}
		})
	}
	kept, reused := allocs(false), allocs(true)
	if reused >= kept {
		t.Errorf("allocations per batch: %.1f reusing the slabs, %.1f without; want fewer", reused, kept)
	}
}
