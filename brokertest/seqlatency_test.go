package brokertest

import (
	"errors"
	"testing"
	"time"
)

func TestSeqLatencyP50(t *testing.T) {
	var oursCalls, rawCalls int
	ours := func() error { oursCalls++; time.Sleep(2 * time.Millisecond); return nil }
	raw := func() error { rawCalls++; return nil }
	o, r, err := SeqLatencyP50(2, 5, ours, raw)
	if err != nil {
		t.Fatal(err)
	}
	if oursCalls != 7 || rawCalls != 7 {
		t.Fatalf("calls ours=%d raw=%d; want 7 each (2 warm + 5)", oursCalls, rawCalls)
	}
	if o < 2 || r >= o {
		t.Fatalf("p50 ours=%.3fms raw=%.3fms; want ours >= 2ms and raw below it", o, r)
	}
}

func TestSeqLatencyP50StopsAtAnError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	_, _, err := SeqLatencyP50(0, 10, func() error { return nil }, func() error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err %v after %d raw calls; want boom after 1", err, calls)
	}
	if _, _, err := SeqLatencyP50(0, 0, nil, nil); err == nil {
		t.Fatal("zero rounds accepted")
	}
}
