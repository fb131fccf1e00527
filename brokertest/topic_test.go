package brokertest

import (
	"regexp"
	"strings"
	"testing"
)

var validTopic = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*[a-z0-9]$`)

func TestTopicShapeAndUniqueness(t *testing.T) {
	cases := []struct{ test, prefix, wantStart string }{
		{"TestPublish/keyed_case", "orders", "orders-testpublish-keyed-case-"},
		{"TestX", "", "bq-testx-"},
		{"TestX", "My.Queue_Name", "my-queue-name-testx-"},
		{"Test/#1/ünïcode", "q", "q-test-1-n-code-"},
		{"///", "q", "q-"},
	}
	for _, c := range cases {
		seen := map[string]bool{}
		for range 50 {
			var got string
			f := run(c.test, func(tb testing.TB) { got = Topic(tb, c.prefix) })
			if f.ended() {
				t.Fatalf("Topic ended the test: %q %q", f.fatal, f.skip)
			}
			if !strings.HasPrefix(got, c.wantStart) {
				t.Errorf("Topic(%q, %q) = %q, want prefix %q", c.test, c.prefix, got, c.wantStart)
			}
			if !validTopic.MatchString(got) || len(got) > maxTopicLen {
				t.Errorf("Topic(%q, %q) = %q is not a valid topic name", c.test, c.prefix, got)
			}
			if seen[got] {
				t.Errorf("Topic returned %q twice", got)
			}
			seen[got] = true
		}
	}
}

func TestTopicLongNameIsCut(t *testing.T) {
	long := "Test" + strings.Repeat("Abc", 100)
	var got string
	f := run(long, func(tb testing.TB) { got = Topic(tb, "prefix") })
	if f.ended() {
		t.Fatalf("Topic ended the test: %q %q", f.fatal, f.skip)
	}
	if len(got) > maxTopicLen || !validTopic.MatchString(got) {
		t.Fatalf("Topic = %q (len %d), want a valid name of at most %d characters", got, len(got), maxTopicLen)
	}
	if !strings.HasPrefix(got, "prefix-testabc") {
		t.Fatalf("Topic = %q lost its prefix or test name", got)
	}
}

func TestTopicWithRealT(t *testing.T) {
	a, b := Topic(t, "x"), Topic(t, "x")
	if a == b {
		t.Fatalf("two calls gave the same name %q", a)
	}
	if !strings.HasPrefix(a, "x-testtopicwithrealt-") {
		t.Fatalf("Topic = %q", a)
	}
}
