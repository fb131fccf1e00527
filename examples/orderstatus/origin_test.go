package orderstatus

import (
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestOrigin(t *testing.T) {
	s := testSettings()
	tests := []struct {
		name        string
		topic       string
		headers     []kafka.Header
		wantAttempt int
		wantFrom    Place
		wantErr     []string // substrings the error must hold; nil for no error
	}{
		{name: "events record is attempt 0 from its own place", topic: s.EventsTopic,
			headers: retryHeaders(3, 1, 1), wantFrom: Place{s.EventsTopic, 2, 41}},
		{name: "retry record reads its headers", topic: s.RetryTopic, headers: retryHeaders(3, 6, 77),
			wantAttempt: 3, wantFrom: Place{s.EventsTopic, 6, 77}},
		{name: "last header wins", topic: s.RetryTopic, headers: append(retryHeaders(1, 0, 0), retryHeaders(2, 1, 5)...),
			wantAttempt: 2, wantFrom: Place{s.EventsTopic, 1, 5}},
		{name: "all headers missing", topic: s.RetryTopic, wantFrom: Place{s.RetryTopic, 2, 41},
			wantErr: []string{"no retry.attempt header", "no retry.partition header", "no retry.offset header"}},
		{name: "attempt below 1", topic: s.RetryTopic, headers: hdr(HeaderAttempt, "0", HeaderPartition, "0", HeaderOffset, "0"),
			wantFrom: Place{s.RetryTopic, 2, 41}, wantErr: []string{`retry.attempt header "0"`, "less than 1"}},
		{name: "attempt not a number", topic: s.RetryTopic, headers: hdr(HeaderAttempt, "two", HeaderPartition, "0", HeaderOffset, "0"),
			wantFrom: Place{s.RetryTopic, 2, 41}, wantErr: []string{`retry.attempt header "two"`}},
		{name: "negative partition", topic: s.RetryTopic, headers: hdr(HeaderAttempt, "1", HeaderPartition, "-1", HeaderOffset, "0"),
			wantFrom: Place{s.RetryTopic, 2, 41}, wantErr: []string{"retry.partition", "negative"}},
		{name: "partition beyond int32", topic: s.RetryTopic, headers: hdr(HeaderAttempt, "1", HeaderPartition, "2147483648", HeaderOffset, "0"),
			wantFrom: Place{s.RetryTopic, 2, 41}, wantErr: []string{"retry.partition"}},
		{name: "negative offset", topic: s.RetryTopic, headers: hdr(HeaderAttempt, "1", HeaderPartition, "0", HeaderOffset, "-4"),
			wantFrom: Place{s.RetryTopic, 2, 41}, wantErr: []string{"retry.offset", "negative"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := kafka.Message{Topic: tc.topic, Partition: 2, Offset: 41, Headers: tc.headers}
			attempt, from, err := s.Origin(m)
			if from != tc.wantFrom {
				t.Errorf("from = %v, want %v", from, tc.wantFrom)
			}
			if tc.wantErr == nil {
				if err != nil || attempt != tc.wantAttempt {
					t.Errorf("Origin = %d, %v; want %d, nil", attempt, err, tc.wantAttempt)
				}
				return
			}
			if err == nil {
				t.Fatalf("Origin accepted the record (attempt %d)", attempt)
			}
			for _, sub := range tc.wantErr {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q does not mention %q", err, sub)
				}
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	s := Settings{MinDelay: 100 * time.Millisecond, MaxDelay: 700 * time.Millisecond}
	want := map[int]time.Duration{0: 100 * time.Millisecond, 1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		3: 400 * time.Millisecond, 4: 700 * time.Millisecond, 50: 700 * time.Millisecond}
	for attempt, w := range want {
		if got := s.Backoff(attempt); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", attempt, got, w)
		}
	}
	if got := s.RetryAt(t0, 3); !got.Equal(t0.Add(400 * time.Millisecond)) {
		t.Errorf("RetryAt(t0, 3) = %v, want t0+400ms", got)
	}
	if got := s.RetryAt(t0, 0); !got.Equal(t0) {
		t.Errorf("RetryAt(t0, 0) = %v, want t0", got)
	}
}
