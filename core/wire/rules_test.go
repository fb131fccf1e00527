package wire

import (
	"reflect"
	"testing"
)

func TestIsBlank(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"", true},
		{" ", true},
		{"\t", true},
		{"\n", true},
		{"\v", true},
		{"\f", true},
		{"\r", true},
		{" \t\n\v\f\r ", true},
		{"x", false},
		{" x ", false},
		{"\u00a0", false}, // NBSP
		{"\u0085", false}, // NEL
		{"\ufeff", false}, // BOM
		{"\u3000", false}, // ideographic space
		{"\u2003", false}, // em space
		{"\x00", false},
		{" \u00a0 ", false},
	}
	for _, tt := range tests {
		if got := IsBlank(tt.s); got != tt.want {
			t.Errorf("IsBlank(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestParseAttemptsHeader(t *testing.T) {
	tests := []struct {
		raw  string
		n    int
		want bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"007", 7, true}, // plain digits: leading zeros are digits
		{"2147483647", 2147483647, true},
		{"2147483648", 0, false},
		{"99999999999999999999999", 0, false},
		{"", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"+1", 0, false},
		{"-1", 0, false},
		{"1.0", 0, false},
		{"1e2", 0, false},
		{"0x1", 0, false},
		{"١", 0, false}, // Arabic-Indic digit one
	}
	for _, tt := range tests {
		n, ok := ParseAttemptsHeader(tt.raw)
		if ok != tt.want || n != tt.n {
			t.Errorf("ParseAttemptsHeader(%q) = %d, %v; want %d, %v", tt.raw, n, ok, tt.n, tt.want)
		}
	}
}

func TestReconcileKafka(t *testing.T) {
	tests := []struct {
		name    string
		body    int
		header  string
		present bool
		want    int
	}{
		{"no header: body", 2, "", false, 2},
		{"header wins", 2, "5", true, 5},
		{"header wins even when lower", 4, "1", true, 1},
		{"header zero", 4, "0", true, 0},
		{"invalid header ignored", 3, "x", true, 3},
		{"blank header ignored", 3, "", true, 3},
		{"out of range ignored", 3, "2147483648", true, 3},
		{"absent flag: value ignored", 3, "9", false, 3},
	}
	for _, tt := range tests {
		if got := ReconcileKafka(tt.body, tt.header, tt.present); got != tt.want {
			t.Errorf("%s: ReconcileKafka = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestReconcilePulsar(t *testing.T) {
	tests := []struct {
		name       string
		body       int
		prop       string
		present    bool
		redelivery int
		want       int
	}{
		{"first delivery", 0, "", false, 0, 0},
		{"body", 2, "", false, 0, 2},
		{"property wins", 2, "4", true, 0, 4},
		{"property lower than body still wins", 3, "1", true, 0, 1},
		{"redelivery floors", 1, "", false, 3, 3},
		{"redelivery floors property", 0, "2", true, 5, 5},
		{"redelivery lower", 0, "6", true, 2, 6},
		{"invalid property", 2, "-1", true, 1, 2},
	}
	for _, tt := range tests {
		if got := ReconcilePulsar(tt.body, tt.prop, tt.present, tt.redelivery); got != tt.want {
			t.Errorf("%s: ReconcilePulsar = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		reconciled, max int
		deadLetter      bool
		want            Decision
	}{
		{0, 3, true, Decision{ActionRetry, 1}},
		{1, 3, true, Decision{ActionRetry, 2}},
		{2, 3, true, Decision{ActionDeadLetter, 3}},
		{2, 3, false, Decision{ActionDrop, 3}},
		{10, 3, true, Decision{ActionDeadLetter, 11}},
		{0, 1, true, Decision{ActionDeadLetter, 1}},
		{0, 1, false, Decision{ActionDrop, 1}},
		{0, 0, true, Decision{ActionDeadLetter, 1}}, // below 1 counts as 1
		{0, -5, false, Decision{ActionDrop, 1}},     // below 1 counts as 1
		{-3, 3, true, Decision{ActionRetry, 1}},     // negative reconciled counts as 0
		{0, 3, true, Decision{ActionRetry, 1}},
	}
	for _, tt := range tests {
		if got := Decide(tt.reconciled, tt.max, tt.deadLetter); got != tt.want {
			t.Errorf("Decide(%d, %d, %v) = %+v, want %+v", tt.reconciled, tt.max, tt.deadLetter, got, tt.want)
		}
	}
}

func TestActionString(t *testing.T) {
	for a, want := range map[Action]string{ActionRetry: "retry", ActionDeadLetter: "dead_letter", ActionDrop: "drop", 0: "unknown"} {
		if got := a.String(); got != want {
			t.Errorf("Action(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

func TestIsContractHeader(t *testing.T) {
	for k, want := range map[string]bool{
		HeaderJob: true, HeaderAttempts: true, HeaderReplayBypass: true, "bq-": true, "bq-x": true,
		HeaderTraceparent: false, "BQ-job": false, "x-bq-job": false, "": false,
	} {
		if got := IsContractHeader(k); got != want {
			t.Errorf("IsContractHeader(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestMergeHeaders(t *testing.T) {
	contract := []Header{{HeaderJob, "urn:a"}, {HeaderAttempts, "1"}}
	tests := []struct {
		name  string
		extra map[string]string
		want  []Header
	}{
		{"no extra", nil, contract},
		{"extra sorted after contract", map[string]string{"z": "1", "a": "2", "traceparent": "tp"},
			[]Header{{HeaderJob, "urn:a"}, {HeaderAttempts, "1"}, {"a", "2"}, {"traceparent", "tp"}, {"z", "1"}}},
		{"contract wins collision", map[string]string{HeaderJob: "other", "k": "v"},
			[]Header{{HeaderJob, "urn:a"}, {HeaderAttempts, "1"}, {"k", "v"}}},
		{"blank keys and values skipped", map[string]string{"": "v", " ": "v", "k": "", "k2": " \t", "ok": "\u00a0"},
			[]Header{{HeaderJob, "urn:a"}, {HeaderAttempts, "1"}, {"ok", "\u00a0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MergeHeaders(contract, tt.extra)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("MergeHeaders = %v, want %v", got, tt.want)
			}
		})
	}
	if got := MergeHeaders(nil, map[string]string{"a": "1"}); !reflect.DeepEqual(got, []Header{{"a", "1"}}) {
		t.Fatalf("MergeHeaders(nil, a) = %v", got)
	}
	// The contract slice passed in is not modified.
	in := []Header{{HeaderJob, "j"}}
	_ = MergeHeaders(in, map[string]string{"x": "y"})
	if !reflect.DeepEqual(in, []Header{{HeaderJob, "j"}}) {
		t.Fatalf("contract modified: %v", in)
	}
}
