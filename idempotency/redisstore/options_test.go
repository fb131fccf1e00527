package redisstore_test

import (
	"errors"
	"strings"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/idempotency/redisstore"
)

func TestNewReportsEveryInvalidOption(t *testing.T) {
	s, err := redisstore.New(nil, redisstore.WithPrefix(""), nil)
	if s != nil || !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("New = %v, %v; want nil and ErrInvalidOption", s, err)
	}
	for _, want := range []string{"nil redis client", "empty key prefix", "nil option"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
}
