package sqlstore_test

import (
	"errors"
	"strings"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/idempotency/sqlstore"
)

func TestNewReportsEveryInvalidOption(t *testing.T) {
	s, err := sqlstore.New(nil, 0, sqlstore.WithTable("no such"), sqlstore.WithClock(nil), nil)
	if s != nil || !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("New = %v, %v; want nil and ErrInvalidOption", s, err)
	}
	for _, want := range []string{"nil database", "unknown dialect", `table name "no such"`, "nil clock", "nil option"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
}
