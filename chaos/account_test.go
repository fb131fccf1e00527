package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_800_000_000_000)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestClasses(t *testing.T) {
	counts := map[Class]int{}
	for seq := range 1000 {
		counts[ClassOfSeq(seq)]++
	}
	if counts[Doomed] != 20 || counts[Flaky] != 100 || counts[Normal] != 880 {
		t.Fatalf("classes of 1000 ids = %v; want 20 doomed, 100 flaky, 880 normal", counts)
	}
	if c := ClassOf(ID("run", 7)); c != Doomed {
		t.Errorf("ClassOf(%s) = %v; want doomed", ID("run", 7), c)
	}
	if c := ClassOf(ID("run", 13)); c != Flaky {
		t.Errorf("ClassOf(%s) = %v; want flaky", ID("run", 13), c)
	}
	cases := []struct {
		seq, attempts int
		fail          bool
	}{{0, 0, false}, {13, 0, true}, {13, 1, true}, {13, 2, false}, {7, 0, true}, {7, 3, true}, {7, 100, true}}
	for _, c := range cases {
		if got := ShouldFail(ID("r", c.seq), c.attempts); got != c.fail {
			t.Errorf("ShouldFail(seq %d, attempts %d) = %v; want %v", c.seq, c.attempts, got, c.fail)
		}
	}
}

func ok(proc, id string, ms int) Handling {
	return Handling{At: at(ms), Proc: proc, ID: id, Attempts: 0, OK: true}
}

func TestAccount(t *testing.T) {
	normal, flaky, doomed := ID("r", 1), ID("r", 13), ID("r", 7)
	lostN, lostD := ID("r", 2), ID("r", 57)
	both := ID("r", 4)
	flakyDead := ID("r", 23)
	rec := &Records{
		Produced: []string{normal, flaky, doomed, lostN, lostD, both, flakyDead},
		Handlings: []Handling{
			ok("consumer-1.1", normal, 1), ok("consumer-2.1", normal, 2), ok("consumer-1.2", normal, 3), // 2 duplicates
			{At: at(1), Proc: "consumer-1.1", ID: flaky, Attempts: 0},
			{At: at(2), Proc: "consumer-1.1", ID: flaky, Attempts: 1},
			{At: at(3), Proc: "consumer-1.1", ID: flaky, Attempts: 2, OK: true},
			{At: at(3), Proc: "consumer-1.1", ID: doomed, Attempts: 0},
			ok("consumer-1.1", both, 4),
			ok("consumer-1.1", ID("other", 1), 5), // never produced
		},
		Events: []Event{{At: at(0), Kind: Kill, Proc: "consumer-1.1"}, {At: at(0), Kind: Term, Proc: "consumer-2.1"},
			{At: at(0), Kind: BrokerKill}, {At: at(1), Kind: BrokerUp}, {At: at(1), Kind: Crash, Proc: "consumer-1.2"}},
	}
	rb := ReadBack{DeadLetters: []Copy{{ID: doomed}, {ID: doomed}, {ID: both}, {ID: flakyDead}}}
	r := Account(rec, rb, Windows{})
	want := Report{Produced: 7, Handled: 3 /* normal, flaky, both */, DeadLettered: 3 /* doomed, both, flakyDead */, Lost: 2,
		Duplicates: 2 + 1, Contradictions: 3, Kills: 2, Crashes: 1, BrokerRestarts: 1}
	if r.Produced != want.Produced || r.Handled != want.Handled || r.DeadLettered != want.DeadLettered || r.Lost != want.Lost ||
		r.Duplicates != want.Duplicates || r.Contradictions != want.Contradictions || r.Kills != want.Kills ||
		r.Crashes != want.Crashes || r.BrokerRestarts != want.BrokerRestarts {
		t.Fatalf("Account = %+v\nwant %+v", r, want)
	}
	if strings.Join(r.LostIDs, ",") != lostN+","+lostD {
		t.Errorf("lost ids %v; want %s and %s", r.LostIDs, lostN, lostD)
	}
	joined := strings.Join(r.Contradicted, "; ")
	for _, w := range []string{both + ": handled successfully and dead-lettered", flakyDead + ": flaky id dead-lettered", ID("other", 1) + ": handled but never produced"} {
		if !strings.Contains(joined, w) {
			t.Errorf("contradictions %q miss %q", joined, w)
		}
	}
	line := r.Line("kafka", 0)
	if line != "chaos: broker=kafka produced=7 handled=3 dead_lettered=3 lost=2 duplicates=3 contradictions=3 kills=2 broker_restarts=1 lag=0" {
		t.Errorf("line = %q", line)
	}
}

func TestUnexplained(t *testing.T) {
	a, b := ID("r", 1), ID("r", 2)
	rec := &Records{
		Produced: []string{a, b},
		Handlings: []Handling{
			ok("consumer-1.1", a, 1000), ok("consumer-2.1", a, 1500), // a: first handling right before the kill
			ok("consumer-2.1", b, 5000), ok("consumer-2.1", b, 9000), // b: no disruption near its first handling
		},
		Events: []Event{{At: at(1000), Kind: Kill, Proc: "consumer-1.1"}},
	}
	r := Account(rec, ReadBack{}, Windows{Commit: 100 * time.Millisecond})
	if r.Duplicates != 2 || r.Unexplained != 1 {
		t.Fatalf("duplicates %d unexplained %d; want 2 and 1 (b)", r.Duplicates, r.Unexplained)
	}
}

func TestAccountDoomedHandled(t *testing.T) {
	doomed := ID("r", 7)
	rec := &Records{Produced: []string{doomed}, Handlings: []Handling{ok("consumer-1.1", doomed, 1)}}
	r := Account(rec, ReadBack{}, Windows{})
	if r.Contradictions != 1 || r.Lost != 0 || !strings.Contains(r.Contradicted[0], "doomed id handled successfully") {
		t.Fatalf("doomed id handled: %+v", r)
	}
}

func TestFailed(t *testing.T) {
	clean := Report{Duplicates: 5, Bound: 5}
	if clean.Failed(0) {
		t.Error("duplicates equal to the bound fail the run")
	}
	for name, c := range map[string]struct {
		r   Report
		lag int64
	}{
		"lost": {Report{Lost: 1}, 0}, "contradiction": {Report{Contradictions: 1}, 0},
		"lag": {Report{}, 1}, "duplicates over the bound": {Report{Duplicates: 6, Bound: 5}, 0},
	} {
		if !c.r.Failed(c.lag) {
			t.Errorf("%s does not fail the run", name)
		}
	}
}

func TestBound(t *testing.T) {
	w := Windows{Commit: 100 * time.Millisecond, Rebalance: 1000 * time.Millisecond, Reach: 1000 * time.Millisecond, BrokerLoss: 500 * time.Millisecond}
	h := func(proc string, ms int) Handling { return Handling{At: at(ms), Proc: proc, ID: "x", OK: true} }
	cases := []struct {
		name   string
		hs     []Handling
		copies []Copy
		events []Event
		retry  int
		want   int
	}{
		{name: "no events", hs: []Handling{h("consumer-1.1", 10)}, want: 0},
		{name: "publish retries", retry: 3, want: 3},
		{
			name: "kill: the one in the handler, own window (t-Commit, t], others [t-Commit, t+Rebalance]",
			hs: []Handling{
				h("consumer-1.1", 900),  // own, exactly t-Commit: open end, out
				h("consumer-1.1", 950),  // own, in
				h("consumer-1.1", 1000), // own, at t: in
				h("consumer-2.1", 900),  // other, at t-Commit: in
				h("consumer-2.1", 2000), // other, at t+Reach: in
				h("consumer-2.1", 2001), // other, after: out
				h("consumer-2.1", 899),  // other, before: out
			},
			events: []Event{{At: at(1000), Kind: Kill, Proc: "consumer-1.1"}},
			want:   1 + 2 + 2,
		},
		{
			name:   "term: only the others, no record in the handler",
			hs:     []Handling{h("consumer-1.1", 950), h("consumer-2.1", 1500)},
			events: []Event{{At: at(1000), Kind: Term, Proc: "consumer-1.1"}},
			want:   1,
		},
		{
			name:   "start: the others",
			hs:     []Handling{h("consumer-1.2", 1500), h("consumer-2.1", 1500)},
			events: []Event{{At: at(1000), Kind: Start, Proc: "consumer-1.2"}},
			want:   1,
		},
		{
			name:   "overlapping windows count a handling once",
			hs:     []Handling{h("consumer-2.1", 1500)},
			events: []Event{{At: at(1000), Kind: Kill, Proc: "consumer-1.1"}, {At: at(1200), Kind: Start, Proc: "consumer-1.2"}},
			want:   1 + 1,
		},
		{
			name:   "re-injector kill: copies in (t-Commit, t]",
			copies: []Copy{{At: at(900)}, {At: at(950)}, {At: at(1000)}, {At: at(1001)}},
			events: []Event{{At: at(1000), Kind: Kill, Proc: "reinjector.1"}, {At: at(1000), Kind: Start, Proc: "reinjector.2"}},
			want:   2,
		},
		{
			name:   "crash counts like a kill",
			hs:     []Handling{h("consumer-1.1", 1000)},
			events: []Event{{At: at(1000), Kind: Crash, Proc: "consumer-1.1"}},
			want:   2,
		},
		{
			name:   "broker restart: [kill-BrokerLoss, up+Reach], handlings and copies",
			hs:     []Handling{h("consumer-1.1", 499), h("consumer-1.1", 500), h("consumer-2.1", 3000), h("consumer-1.1", 4000), h("consumer-1.1", 4001)},
			copies: []Copy{{At: at(2000)}, {At: at(5000)}},
			events: []Event{{At: at(1000), Kind: BrokerKill}, {At: at(3000), Kind: BrokerUp}},
			want:   3 + 1,
		},
	}
	for _, c := range cases {
		rec := &Records{Handlings: c.hs, Events: c.events}
		if got := Bound(rec, ReadBack{Reinjected: c.copies, PublishRetries: c.retry}, w); got != c.want {
			t.Errorf("%s: Bound = %d; want %d", c.name, got, c.want)
		}
	}

	// Without a rebalance window (Pulsar Shared), a group change costs the
	// other consumers nothing.
	shared := w
	shared.Rebalance = 0
	rec := &Records{
		Handlings: []Handling{h("consumer-1.1", 950), h("consumer-2.1", 1000), h("consumer-2.1", 1500)},
		Events:    []Event{{At: at(1000), Kind: Kill, Proc: "consumer-1.1"}, {At: at(1200), Kind: Start, Proc: "consumer-1.2"}},
	}
	if got := Bound(rec, ReadBack{}, shared); got != 1+1 {
		t.Errorf("no rebalance window: Bound = %d; want 2 (the one in the handler and its own window)", got)
	}

	// A consumer running several handlers at once may be killed with
	// InFlight records in its handlers: each kill or crash counts that many.
	concurrent := shared
	concurrent.InFlight = 16
	rec = &Records{
		Handlings: []Handling{h("consumer-1.1", 950)},
		Events:    []Event{{At: at(1000), Kind: Kill, Proc: "consumer-1.1"}, {At: at(3000), Kind: Crash, Proc: "consumer-2.1"}},
	}
	if got := Bound(rec, ReadBack{}, concurrent); got != 16+1+16 {
		t.Errorf("InFlight 16: Bound = %d; want 33 (16 per kill or crash, one handling in the window)", got)
	}

	// The graceful variant: PerStop per SIGTERM, nothing else.
	graceful := Windows{Commit: time.Second, PerStop: 1}
	rec = &Records{
		Handlings: []Handling{h("consumer-1.1", 950), h("consumer-2.1", 1000), h("reinjector.1", 1000)},
		Events: []Event{{At: at(1000), Kind: Term, Proc: "consumer-1.1"}, {At: at(1200), Kind: Start, Proc: "consumer-1.2"},
			{At: at(2000), Kind: Term, Proc: "reinjector.1"}},
	}
	if got := Bound(rec, ReadBack{Reinjected: []Copy{{At: at(1990)}}}, graceful); got != 2 {
		t.Errorf("graceful: Bound = %d; want 2 (one per SIGTERM)", got)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenJournal(filepath.Join(dir, ProducedFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Append(ID("r", 1)+"\n", ID("r", 2)+"\n"); err != nil {
		t.Fatal(err)
	}
	p.Close()
	e, _ := OpenJournal(filepath.Join(dir, EventsFile))
	e.Append(Event{At: at(5), Kind: BrokerKill}.Line(), Event{At: at(6), Kind: Kill, Proc: "consumer-1.1"}.Line())
	e.Close()
	j, _ := OpenJournal(filepath.Join(dir, HandledFile("consumer-1.1")))
	j.Append(Handling{At: at(7), ID: ID("r", 1), Attempts: 2, OK: true}.Line(), Handling{At: at(8), ID: ID("r", 2), Attempts: 0}.Line())
	j.Close()
	// A line cut by a SIGKILL before its fsync returned.
	f, _ := os.OpenFile(filepath.Join(dir, HandledFile("consumer-1.1")), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("1800000000009 r-00")
	f.Close()

	rec, err := ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Produced) != 2 || rec.Produced[1] != ID("r", 2) {
		t.Errorf("produced = %v", rec.Produced)
	}
	if len(rec.Events) != 2 || rec.Events[0].Kind != BrokerKill || rec.Events[0].Proc != "" || rec.Events[1].Proc != "consumer-1.1" || !rec.Events[1].At.Equal(at(6)) {
		t.Errorf("events = %+v", rec.Events)
	}
	want := []Handling{{At: at(7), Proc: "consumer-1.1", ID: ID("r", 1), Attempts: 2, OK: true}, {At: at(8), Proc: "consumer-1.1", ID: ID("r", 2)}}
	if len(rec.Handlings) != 2 || rec.Handlings[0] != want[0] || rec.Handlings[1] != want[1] {
		t.Errorf("handlings = %+v; want %+v", rec.Handlings, want)
	}
	if rec.Torn != 1 {
		t.Errorf("torn = %d; want 1", rec.Torn)
	}

	rb := ReadBack{PublishRetries: 2, DeadLetters: []Copy{{ID: ID("r", 7), Attempts: 4, At: at(9)}},
		Reinjected: []Copy{{ID: ID("r", 13), Attempts: 1, At: at(10)}, {ID: ID("r", 13), Attempts: 2, At: at(11)}}}
	if err := WriteReadBack(dir, rb); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReadBack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.PublishRetries != 2 || len(got.DeadLetters) != 1 || got.DeadLetters[0] != rb.DeadLetters[0] ||
		len(got.Reinjected) != 2 || got.Reinjected[1] != rb.Reinjected[1] {
		t.Errorf("read-back round trip = %+v; want %+v", got, rb)
	}

	os.WriteFile(filepath.Join(dir, HandledFile("consumer-2.1")), []byte("garbage line\n"), 0o644)
	if _, err := ReadRecords(dir); err == nil {
		t.Error("a malformed complete line is not reported")
	}
}
