// Package chaos holds the durable records and the accounting of the chaos
// suite (cmd/bqchaos): which ids were produced, which a consumer handled
// and how, what the driver did and when, and from those plus what is read
// back from the topics, the figures of the `chaos:` line and the duplicate
// bound. No library module imports it.
package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Class says how the chaos handler treats an id.
type Class int

const (
	// Normal ids succeed at their first delivery.
	Normal Class = iota
	// Flaky ids fail while their attempts are below FlakyFailures, then
	// succeed: they travel the retry path (the tiers on Kafka).
	Flaky
	// Doomed ids always fail: they end in the DLQ after max attempts.
	Doomed
)

// FlakyFailures is how many deliveries of a Flaky id fail (attempts 0 and 1).
const FlakyFailures = 2

func (c Class) String() string {
	switch c {
	case Flaky:
		return "flaky"
	case Doomed:
		return "doomed"
	}
	return "normal"
}

// ClassOfSeq is the class of the id with sequence number seq: one in 50
// is Doomed, one in 10 (of the others) Flaky.
func ClassOfSeq(seq int) Class {
	switch {
	case seq%50 == 7:
		return Doomed
	case seq%10 == 3:
		return Flaky
	}
	return Normal
}

// ID is the envelope id (meta.id) of sequence number seq of run.
func ID(run string, seq int) string { return fmt.Sprintf("%s-%07d", run, seq) }

// ClassOf is the class of an id made by ID; an id of another form is Normal.
func ClassOf(id string) Class {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return Normal
	}
	seq, err := strconv.Atoi(id[i+1:])
	if err != nil {
		return Normal
	}
	return ClassOfSeq(seq)
}

// ShouldFail is the handler's decision for a delivery of id carrying attempts.
func ShouldFail(id string, attempts int) bool {
	switch ClassOf(id) {
	case Doomed:
		return true
	case Flaky:
		return attempts < FlakyFailures
	}
	return false
}

// Handling is one delivery a consumer incarnation handled: one line of its
// record file, written and fsynced before the handler returns.
type Handling struct {
	At       time.Time
	Proc     string // the incarnation, e.g. consumer-1.3
	ID       string
	Attempts int
	OK       bool // the handler returned nil
}

// Line is the record line of h (without Proc, which names the file).
func (h Handling) Line() string {
	outcome := "fail"
	if h.OK {
		outcome = "ok"
	}
	return fmt.Sprintf("%d %s %d %s\n", h.At.UnixMilli(), h.ID, h.Attempts, outcome)
}

// parseHandling parses a record line.
func parseHandling(proc, line string) (Handling, error) {
	f := strings.Fields(line)
	if len(f) != 4 || (f[3] != "ok" && f[3] != "fail") {
		return Handling{}, fmt.Errorf("malformed record line %q", line)
	}
	ms, err1 := strconv.ParseInt(f[0], 10, 64)
	att, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return Handling{}, fmt.Errorf("malformed record line %q", line)
	}
	return Handling{At: time.UnixMilli(ms), Proc: proc, ID: f[1], Attempts: att, OK: f[3] == "ok"}, nil
}

// Event is one thing the driver did, in its event file.
type Event struct {
	At   time.Time
	Kind EventKind
	Proc string // the incarnation concerned; "" for broker events
}

// EventKind names a driver action.
type EventKind string

// The driver's events.
const (
	Start      EventKind = "start"       // a process incarnation was started
	Kill       EventKind = "kill"        // SIGKILL (the process is gone when it is logged)
	Term       EventKind = "term"        // SIGTERM, logged once the process exited
	Crash      EventKind = "crash"       // a process exited without being asked to
	BrokerKill EventKind = "broker-kill" // kill -9 of the broker JVM
	BrokerUp   EventKind = "broker-up"   // the broker serves again on its kept data
)

// Line is the event file line of e.
func (e Event) Line() string {
	proc := e.Proc
	if proc == "" {
		proc = "-"
	}
	return fmt.Sprintf("%d %s %s\n", e.At.UnixMilli(), e.Kind, proc)
}

func parseEvent(line string) (Event, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return Event{}, fmt.Errorf("malformed event line %q", line)
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Event{}, fmt.Errorf("malformed event line %q", line)
	}
	proc := f[2]
	if proc == "-" {
		proc = ""
	}
	return Event{At: time.UnixMilli(ms), Kind: EventKind(f[1]), Proc: proc}, nil
}

// Journal is an append-only file whose every Append is written and
// fsynced before it returns, so a line that Append returned for survives a
// SIGKILL of the writer (and of the machine, as far as fsync goes). It is
// safe for concurrent use.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal opens (creating) path for appending.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: open journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Append writes lines (each ending in a newline) and fsyncs once.
func (j *Journal) Append(lines ...string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.WriteString(strings.Join(lines, "")); err != nil {
		return fmt.Errorf("chaos: append to %s: %w", j.f.Name(), err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("chaos: fsync %s: %w", j.f.Name(), err)
	}
	return nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// File names inside a run directory.
const (
	ProducedFile = "produced.log"
	EventsFile   = "events.log"
	ReadBackFile = "readback.log"
	handledGlob  = "handled-*.log"
)

// HandledFile is the record file of a consumer incarnation.
func HandledFile(proc string) string { return "handled-" + proc + ".log" }

// readLines returns the complete lines of path; a last line without its
// newline (a write cut by a SIGKILL before its fsync returned) is dropped
// and counted in torn.
func readLines(path string) (lines []string, torn int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("chaos: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for {
		s, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			if s != "" {
				torn++
			}
			return lines, torn, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("chaos: read %s: %w", path, err)
		}
		lines = append(lines, strings.TrimSuffix(s, "\n"))
	}
}

// Records is everything the run directory holds.
type Records struct {
	Produced  []string
	Handlings []Handling
	Events    []Event
	Torn      int // incomplete last lines dropped
}

// ReadRecords reads the run directory dir.
func ReadRecords(dir string) (*Records, error) {
	rec := &Records{}
	lines, torn, err := readLines(filepath.Join(dir, ProducedFile))
	if err != nil {
		return nil, err
	}
	rec.Produced, rec.Torn = lines, torn
	if _, err := os.Stat(filepath.Join(dir, EventsFile)); err == nil {
		lines, torn, err := readLines(filepath.Join(dir, EventsFile))
		if err != nil {
			return nil, err
		}
		rec.Torn += torn
		for _, l := range lines {
			e, err := parseEvent(l)
			if err != nil {
				return nil, err
			}
			rec.Events = append(rec.Events, e)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, handledGlob))
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	sort.Strings(files)
	for _, path := range files {
		proc := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "handled-"), ".log")
		lines, torn, err := readLines(path)
		if err != nil {
			return nil, err
		}
		rec.Torn += torn
		for _, l := range lines {
			h, err := parseHandling(proc, l)
			if err != nil {
				return nil, fmt.Errorf("chaos: %s: %w", path, err)
			}
			rec.Handlings = append(rec.Handlings, h)
		}
	}
	return rec, nil
}

// WriteReadBack stores rb in dir (ReadBackFile), so that a kept run
// directory can be accounted again (`bqchaos account`).
func WriteReadBack(dir string, rb ReadBack) error {
	var b strings.Builder
	fmt.Fprintf(&b, "publish_retries %d\nlag %d\n", rb.PublishRetries, rb.Lag)
	for _, c := range rb.DeadLetters {
		fmt.Fprintf(&b, "dead %s %d %d\n", c.ID, c.Attempts, c.At.UnixMilli())
	}
	for _, c := range rb.Reinjected {
		fmt.Fprintf(&b, "reinjected %s %d %d\n", c.ID, c.Attempts, c.At.UnixMilli())
	}
	if err := os.WriteFile(filepath.Join(dir, ReadBackFile), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

// ReadReadBack reads what WriteReadBack stored.
func ReadReadBack(dir string) (ReadBack, error) {
	var rb ReadBack
	lines, _, err := readLines(filepath.Join(dir, ReadBackFile))
	if err != nil {
		return rb, err
	}
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "publish_retries":
			rb.PublishRetries, err = strconv.Atoi(f[1])
		case len(f) == 2 && f[0] == "lag":
			rb.Lag, err = strconv.ParseInt(f[1], 10, 64)
		case len(f) == 4 && (f[0] == "dead" || f[0] == "reinjected"):
			var c Copy
			var ms int64
			c.ID = f[1]
			if c.Attempts, err = strconv.Atoi(f[2]); err == nil {
				ms, err = strconv.ParseInt(f[3], 10, 64)
				c.At = time.UnixMilli(ms)
			}
			if f[0] == "dead" {
				rb.DeadLetters = append(rb.DeadLetters, c)
			} else {
				rb.Reinjected = append(rb.Reinjected, c)
			}
		default:
			err = errors.New("unknown line")
		}
		if err != nil {
			return rb, fmt.Errorf("chaos: %s: %q: %w", ReadBackFile, l, err)
		}
	}
	return rb, nil
}
