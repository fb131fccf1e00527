package orderstatus

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSQLiteStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(id, order string, st Status) (Applied, error) {
		return s.Apply(ctx, Event{ID: id, OrderID: order, Status: st})
	}
	if _, err := apply("e1", "A", StatusPaid); !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("paid before created: %v, want ErrInvalidTransition", err)
	}
	for _, step := range []struct {
		id   string
		st   Status
		want Applied
	}{{"e0", StatusCreated, Projected}, {"e1", StatusPaid, Projected}, {"e1", StatusPaid, AlreadyApplied}, {"e9", StatusPaid, AlreadyApplied}} {
		got, err := apply(step.id, "A", step.st)
		if err != nil || got != step.want {
			t.Fatalf("apply %s %s = %v, %v; want %v", step.id, step.st, got, err, step.want)
		}
	}
	if _, err := apply("e2", "A", StatusDelivered); !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("delivered after paid: %v, want ErrInvalidTransition", err)
	}
	if ok, _ := s.HasEvent(ctx, "e2"); ok {
		t.Error("a refused event was recorded")
	}
	if ok, _ := s.HasEvent(ctx, "e9"); !ok {
		t.Error("a duplicate status event was not recorded")
	}
	s.Close()

	// The projection survives a reopen.
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	orders, err := s.Orders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(orders) != 1 {
		t.Fatalf("orders = %+v, want one", orders)
	}
	if diff := cmp.Diff([]Status{StatusCreated, StatusPaid}, orders[0].History); diff != "" || orders[0].Status != StatusPaid {
		t.Errorf("order A status %s history (-want +got):\n%s", orders[0].Status, diff)
	}
	s.Close()
	if _, err := s.Apply(ctx, Event{ID: "x", OrderID: "B", Status: StatusCreated}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Apply on a closed store = %v, want ErrUnavailable", err)
	}
}
