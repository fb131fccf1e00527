package babelqueue

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// releasingTransport is a batchTransport that says whether it keeps
// nothing of an acknowledged batch, and copies each body as it was at
// SendBatch, so that a test can tell a body rewritten afterwards.
type releasingTransport struct {
	batchTransport
	releases bool
	copies   [][]string
}

func (t *releasingTransport) ReleasesBatch() bool { return t.releases }

func (t *releasingTransport) SendBatch(ctx context.Context, outs []*driver.Outgoing) ([]driver.Receipt, error) {
	c := make([]string, len(outs))
	for i, o := range outs {
		c[i] = strings.Clone(o.Body)
	}
	t.copies = append(t.copies, c)
	return t.batchTransport.SendBatch(ctx, outs)
}

// unchanged fails t when a body batch i was handed differs now from its
// copy taken at SendBatch.
func (t *releasingTransport) unchanged(tb testing.TB, i int) {
	tb.Helper()
	for j, out := range t.batches[i] {
		if out.Body != t.copies[i][j] {
			tb.Fatalf("batch %d body %d was rewritten after SendBatch: %q, was %q", i, j, out.Body, t.copies[i][j])
		}
	}
}

func TestPublishBatchBodiesOfReusedSlabsAreTheirEnvelopes(t *testing.T) {
	tr := &releasingTransport{releases: true}
	app := testApp(tr, WithDefaultQueue("orders"))
	for round := range 3 {
		ids, err := app.PublishBatch(context.Background(), batchOf(20))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, body := range tr.copies[round] {
			env, err := wire.Decode([]byte(body))
			if err != nil || env.Meta.ID != ids[i] || seen[ids[i]] {
				t.Fatalf("round %d body %d: %v, %v; want meta.id %s, once", round, i, err, env, ids[i])
			}
			seen[ids[i]] = true
		}
	}
}

func TestPublishBatchKeepsTheSlabsOfAFailedBatch(t *testing.T) {
	tr := &releasingTransport{releases: true}
	fail := true
	tr.batchErr = func(n int) error {
		if !fail {
			return nil
		}
		errs := make(driver.SendErrors, n)
		errs[1] = errors.Join(ErrPublishUnknown, io.ErrUnexpectedEOF)
		return errs
	}
	app := testApp(tr, WithDefaultQueue("orders"))
	_, err := app.PublishBatch(context.Background(), batchOf(3))
	var be *BatchPublishError
	if !errors.As(err, &be) {
		t.Fatalf("publish = %v; want a BatchPublishError", err)
	}
	fail = false
	for range 3 {
		if _, err := app.PublishBatch(context.Background(), batchOf(3)); err != nil {
			t.Fatal(err)
		}
	}
	tr.unchanged(t, 0)
	if _, err := app.Republish(context.Background(), be.Errs[1]); err != nil {
		t.Fatal(err)
	}
	if len(tr.sent) != 1 || tr.sent[0].Body != tr.copies[0][1] {
		t.Errorf("republished %+v; want entry 1 of the failed batch byte for byte", tr.sent)
	}
}

func TestPublishBatchKeepsTheSlabsWithoutRelease(t *testing.T) {
	for name, opts := range map[string][]Option{
		"a transport keeping them": nil,
		"publish hooks":            {WithHooks(&countingHook{})},
	} {
		t.Run(name, func(t *testing.T) {
			tr := &releasingTransport{releases: opts != nil}
			app := testApp(tr, append([]Option{WithDefaultQueue("orders")}, opts...)...)
			for range 4 {
				if _, err := app.PublishBatch(context.Background(), batchOf(5)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tr.batches {
				tr.unchanged(t, i)
			}
		})
	}
}

// TestPublishBatchIDsOutliveTheirMaker publishes batches one after the
// other (their Makers come back from the pool) and checks that the ids an
// earlier batch returned are still the ids its bodies carry, and that no
// id repeats.
func TestPublishBatchIDsOutliveTheirMaker(t *testing.T) {
	tr := &releasingTransport{releases: true}
	app := testApp(tr, WithDefaultQueue("orders"))
	var returned [][]string
	seen := map[string]bool{}
	for range 30 {
		ids, err := app.PublishBatch(context.Background(), batchOf(7))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("id %s returned twice", id)
			}
			seen[id] = true
		}
		returned = append(returned, ids)
	}
	for round, ids := range returned {
		for i, body := range tr.copies[round] {
			env, err := wire.Decode([]byte(body))
			if err != nil || env.Meta.ID != ids[i] {
				t.Fatalf("batch %d message %d: returned id now %q, body says %q (%v)", round, i, ids[i], env.Meta.ID, err)
			}
		}
	}
}
