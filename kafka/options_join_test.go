package kafka

import (
	"errors"
	"strings"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestNewReportsEveryOptionProblem: New reports the problems of all its
// options at once, two SASL mechanisms among them.
func TestNewReportsEveryOptionProblem(t *testing.T) {
	_, err := New(nil, WithMaxWaitTime(0), WithSASLPlain("bq", "secret"), WithSASLSCRAM(SCRAMSHA256, "bq", "secret"), WithGroupID(" "))
	if !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("New = %v, want ErrInvalidOption", err)
	}
	for _, want := range []string{"WithSASLPlain and WithSASLSCRAM", "no brokers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New error %q does not report %q", err, want)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n < 4 {
		t.Errorf("New reported %d problems, want 4 or more: %v", n, err)
	}
}
