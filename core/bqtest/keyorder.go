package bqtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// KeyedSeq is the data of a per-key order check: message N of key K.
type KeyedSeq struct {
	K int `json:"k"`
	N int `json:"n"`
}

// SeqKey is the record key of key k in a per-key order check.
func SeqKey(k int) []byte { return fmt.Appendf(nil, "key-%d", k) }

// PublishKeyedSeq publishes keys × n messages through publish: key k's
// numbers 0..n-1 in order from a goroutine of its own, all keys at once.
// It returns the first publish error, after every goroutine has ended.
func PublishKeyedSeq(ctx context.Context, keys, n int, publish func(ctx context.Context, key []byte, data KeyedSeq) error) error {
	var wg sync.WaitGroup
	var failed atomic.Value
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := SeqKey(k)
			for i := range n {
				if err := publish(ctx, key, KeyedSeq{K: k, N: i}); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	err, _ := failed.Load().(error)
	return err
}

// KeyOrder checks that every key's numbers are handled in their publish
// order. It is safe for concurrent use.
type KeyOrder struct {
	mu         sync.Mutex
	next       map[int]int
	violations int
	handled    atomic.Int64
}

// NewKeyOrder returns an empty KeyOrder.
func NewKeyOrder() *KeyOrder { return &KeyOrder{next: make(map[int]int)} }

// See records one handling of m; one that is not the next number of its
// key counts as a violation.
func (o *KeyOrder) See(m KeyedSeq) {
	o.mu.Lock()
	if m.N != o.next[m.K] {
		o.violations++
	}
	o.next[m.K] = m.N + 1
	o.mu.Unlock()
	o.handled.Add(1)
}

// Handler returns a handler that decodes a KeyedSeq, sleeps a random
// time up to maxLatency (a handler doing I/O) and records it.
func (o *KeyOrder) Handler(maxLatency time.Duration) func(context.Context, *wire.Envelope) error {
	return func(_ context.Context, env *wire.Envelope) error {
		var m KeyedSeq
		if err := env.BindData(&m); err != nil {
			return err
		}
		if maxLatency > 0 {
			time.Sleep(rand.N(maxLatency + 1))
		}
		o.See(m)
		return nil
	}
}

// Handled is how many handlings were recorded.
func (o *KeyOrder) Handled() int64 { return o.handled.Load() }

// Violations is how many handlings were out of their key's order.
func (o *KeyOrder) Violations() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.violations
}

// WaitHandled polls until want handlings were recorded or timeout passed,
// and returns how many were.
func (o *KeyOrder) WaitHandled(want int64, timeout time.Duration) int64 {
	deadline := time.Now().Add(timeout)
	for o.handled.Load() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return o.handled.Load()
}
