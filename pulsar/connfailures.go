package pulsar

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"

	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// connFailures remembers why the latest attempt of a client the Transport
// built to connect to a broker failed, so that a bare "connection error"
// of a producer or consumer creation can say why (see DESIGN.md,
// "Connection-failure reporting"). A connection that becomes ready clears
// it.
type connFailures struct {
	mu     sync.Mutex
	reason string
}

// connFailurePrefixes are the messages pulsar-client-go logs when a
// connection to a broker cannot be established (TCP or TLS dial, handshake,
// credentials, the broker refusing the CONNECT command).
var connFailurePrefixes = []string{
	"Failed to connect to broker",
	"Failed to establish connection with broker",
	"Failed to perform initial handshake",
	"Failed to load auth credentials",
	"Failed to configure TLS",
}

// connReadyMessage is logged by pulsar-client-go when a connection is
// ready.
const connReadyMessage = "Connection is ready"

// observe records msg (with err and the broker address, when known) when it
// reports a failed connection, and forgets the last reason when it reports
// a ready one.
func (f *connFailures) observe(msg string, err error, addr any) {
	if strings.HasPrefix(msg, connReadyMessage) {
		f.mu.Lock()
		f.reason = ""
		f.mu.Unlock()
		return
	}
	for _, p := range connFailurePrefixes {
		if !strings.HasPrefix(msg, p) {
			continue
		}
		reason := strings.TrimSuffix(msg, ".")
		if err != nil {
			reason += ": " + err.Error()
		}
		if addr != nil {
			reason = fmt.Sprintf("%v: %s", addr, reason)
		}
		f.mu.Lock()
		f.reason = reason
		f.mu.Unlock()
		return
	}
}

// explain returns err with the last connection failure appended, or err
// unchanged when there is none (or f is nil: a client the caller gave).
// The result still matches err with errors.Is and errors.As.
func (f *connFailures) explain(err error) error {
	if f == nil || err == nil {
		return err
	}
	f.mu.Lock()
	reason := f.reason
	f.mu.Unlock()
	if reason == "" {
		return err
	}
	return fmt.Errorf("%w (last broker connection failure: %s)", err, reason)
}

// newFailureLogger returns the logger for a client the Transport builds: it
// writes to l (through pulsar-client-go's slog adapter) and feeds f.
func newFailureLogger(l *slog.Logger, f *connFailures) plog.Logger {
	return failureLogger{inner: plog.NewLoggerWithSlog(l), f: f}
}

// failureLogger is a pulsar-client-go logger that passes everything on to
// inner and shows warnings, errors and readiness to its connFailures.
type failureLogger struct {
	inner plog.Logger
	f     *connFailures
	addr  any // the remote_addr field of a connection's sub-logger
}

func (l failureLogger) SubLogger(fields plog.Fields) plog.Logger {
	addr := l.addr
	if a, ok := fields["remote_addr"]; ok {
		addr = a
	}
	return failureLogger{inner: l.inner.SubLogger(fields), f: l.f, addr: addr}
}

func (l failureLogger) entry(e plog.Entry, err error) plog.Entry {
	return failureEntry{inner: e, f: l.f, addr: l.addr, err: err}
}

func (l failureLogger) WithFields(fields plog.Fields) plog.Entry {
	return l.entry(l.inner.WithFields(fields), nil)
}

func (l failureLogger) WithField(name string, value any) plog.Entry {
	return l.entry(l.inner.WithField(name, value), nil)
}

func (l failureLogger) WithError(err error) plog.Entry { return l.entry(l.inner.WithError(err), err) }
func (l failureLogger) Debug(args ...any)              { l.inner.Debug(args...) }
func (l failureLogger) Debugf(format string, args ...any) {
	l.inner.Debugf(format, args...)
}

func (l failureLogger) Info(args ...any) {
	l.f.observe(fmt.Sprint(args...), nil, l.addr)
	l.inner.Info(args...)
}

func (l failureLogger) Infof(format string, args ...any) {
	l.f.observe(fmt.Sprintf(format, args...), nil, l.addr)
	l.inner.Infof(format, args...)
}

func (l failureLogger) Warn(args ...any) {
	l.f.observe(fmt.Sprint(args...), nil, l.addr)
	l.inner.Warn(args...)
}

func (l failureLogger) Warnf(format string, args ...any) {
	l.f.observe(fmt.Sprintf(format, args...), nil, l.addr)
	l.inner.Warnf(format, args...)
}

func (l failureLogger) Error(args ...any) {
	l.f.observe(fmt.Sprint(args...), nil, l.addr)
	l.inner.Error(args...)
}

func (l failureLogger) Errorf(format string, args ...any) {
	l.f.observe(fmt.Sprintf(format, args...), nil, l.addr)
	l.inner.Errorf(format, args...)
}

// failureEntry is the Entry of a failureLogger; it keeps the error given to
// WithError so the recorded reason carries it.
type failureEntry struct {
	inner plog.Entry
	f     *connFailures
	addr  any
	err   error
}

func (e failureEntry) WithFields(fields plog.Fields) plog.Entry {
	return failureEntry{inner: e.inner.WithFields(fields), f: e.f, addr: e.addr, err: e.err}
}

func (e failureEntry) WithField(name string, value any) plog.Entry {
	return failureEntry{inner: e.inner.WithField(name, value), f: e.f, addr: e.addr, err: e.err}
}

func (e failureEntry) Debug(args ...any)                 { e.inner.Debug(args...) }
func (e failureEntry) Debugf(format string, args ...any) { e.inner.Debugf(format, args...) }

func (e failureEntry) Info(args ...any) {
	e.f.observe(fmt.Sprint(args...), e.err, e.addr)
	e.inner.Info(args...)
}

func (e failureEntry) Infof(format string, args ...any) {
	e.f.observe(fmt.Sprintf(format, args...), e.err, e.addr)
	e.inner.Infof(format, args...)
}

func (e failureEntry) Warn(args ...any) {
	e.f.observe(fmt.Sprint(args...), e.err, e.addr)
	e.inner.Warn(args...)
}

func (e failureEntry) Warnf(format string, args ...any) {
	e.f.observe(fmt.Sprintf(format, args...), e.err, e.addr)
	e.inner.Warnf(format, args...)
}

func (e failureEntry) Error(args ...any) {
	e.f.observe(fmt.Sprint(args...), e.err, e.addr)
	e.inner.Error(args...)
}

func (e failureEntry) Errorf(format string, args ...any) {
	e.f.observe(fmt.Sprintf(format, args...), e.err, e.addr)
	e.inner.Errorf(format, args...)
}
