package pulsar

import (
	"errors"
	"strings"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestNewReportsEveryOptionProblem: New reports the problems of all its
// options at once, a second authentication among them.
func TestNewReportsEveryOptionProblem(t *testing.T) {
	_, err := New(nil, WithSubscription(" "), WithMaxWaitTime(0), WithNackRedeliveryDelay(-time.Second),
		WithToken("t"), WithTLSAuth("client.pem", "client.key"))
	if !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("New = %v, want ErrInvalidOption", err)
	}
	for _, want := range []string{"subscription", "max wait", "WithToken and WithTLSAuth", "WithServiceURL or WithClient"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New error %q does not report %q", err, want)
		}
	}
}
