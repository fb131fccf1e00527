package orderstatus

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Names of the environment variables read by SettingsFromEnv.
const (
	EnvBrokers         = "KAFKA_BROKERS"
	EnvEventsTopic     = "EVENTS_TOPIC"
	EnvRetryTopic      = "RETRY_TOPIC"
	EnvDeadLetterTopic = "DEAD_LETTER_TOPIC"
	EnvGroupID         = "CONSUMER_GROUP"
	EnvStorePath       = "STORE_PATH"
	EnvRetryAttempts   = "RETRY_ATTEMPTS"
	EnvRetryMinDelay   = "RETRY_MIN_DELAY"
	EnvRetryMaxDelay   = "RETRY_MAX_DELAY"
)

// Defaults of the settings whose variable is unset or empty. KAFKA_BROKERS
// has no default.
const (
	DefaultEventsTopic     = "orders.events"
	DefaultRetryTopic      = "orders.retry"
	DefaultDeadLetterTopic = "orders.dlq"
	DefaultGroupID         = "orderstatus"
	DefaultStorePath       = "orderstatus.db"
	DefaultAttempts        = 5
	DefaultMinDelay        = time.Second
	DefaultMaxDelay        = time.Minute
)

// ErrInvalidSettings marks settings that Validate (and so SettingsFromEnv)
// refuses.
var ErrInvalidSettings = errors.New("orderstatus: invalid settings")

// Settings configure the processor.
type Settings struct {
	// Brokers are the Kafka bootstrap addresses, host:port each.
	Brokers []string
	// EventsTopic holds the order events.
	EventsTopic string
	// RetryTopic holds records retried after a failed attempt.
	RetryTopic string
	// DeadLetterTopic holds records the processor gave up on.
	DeadLetterTopic string
	// GroupID is the consumer group of the processor.
	GroupID string
	// StorePath is the SQLite file of the projection.
	StorePath string
	// Attempts is the number of attempts a record gets, the first included
	// (RETRY_ATTEMPTS); 1 means no retry.
	Attempts int
	// MinDelay is the backoff of the first retry (RETRY_MIN_DELAY).
	MinDelay time.Duration
	// MaxDelay caps the backoff (RETRY_MAX_DELAY).
	MaxDelay time.Duration
}

// SettingsFromEnv reads the settings from environment variables through
// getenv (os.Getenv in a process), applies the defaults and validates the
// result. Every problem is reported at once; the error wraps
// ErrInvalidSettings. Durations use time.ParseDuration syntax ("250ms").
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	value := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	s := Settings{
		EventsTopic:     value(EnvEventsTopic, DefaultEventsTopic),
		RetryTopic:      value(EnvRetryTopic, DefaultRetryTopic),
		DeadLetterTopic: value(EnvDeadLetterTopic, DefaultDeadLetterTopic),
		GroupID:         value(EnvGroupID, DefaultGroupID),
		StorePath:       value(EnvStorePath, DefaultStorePath),
		Attempts:        DefaultAttempts,
		MinDelay:        DefaultMinDelay,
		MaxDelay:        DefaultMaxDelay,
	}
	var errs []error
	if v := value(EnvBrokers, ""); v != "" {
		for _, b := range strings.Split(v, ",") {
			s.Brokers = append(s.Brokers, strings.TrimSpace(b))
		}
	}
	if v := value(EnvRetryAttempts, ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q is not an integer", EnvRetryAttempts, v))
		} else {
			s.Attempts = n
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{{EnvRetryMinDelay, &s.MinDelay}, {EnvRetryMaxDelay, &s.MaxDelay}} {
		if v := value(d.key, ""); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %q is not a duration such as 250ms or 1m", d.key, v))
			} else {
				*d.dst = parsed
			}
		}
	}
	return s, invalid(append(errs, s.problems()...))
}

// Validate reports every setting that cannot work, joined in one error that
// wraps ErrInvalidSettings, or nil.
func (s Settings) Validate() error {
	return invalid(s.problems())
}

func invalid(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidSettings, errors.Join(errs...))
}

// problems lists what is wrong with s, in the order of the fields.
func (s Settings) problems() []error {
	var errs []error
	if len(s.Brokers) == 0 {
		errs = append(errs, fmt.Errorf("%s is not set: give the Kafka brokers as host:port[,host:port...]", EnvBrokers))
	}
	for _, b := range s.Brokers {
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port", EnvBrokers, b))
		}
	}
	topics := []struct{ key, name string }{
		{EnvEventsTopic, s.EventsTopic}, {EnvRetryTopic, s.RetryTopic}, {EnvDeadLetterTopic, s.DeadLetterTopic},
	}
	for i, t := range topics {
		if strings.TrimSpace(t.name) == "" {
			errs = append(errs, fmt.Errorf("%s is empty", t.key))
		}
		for _, u := range topics[:i] {
			if t.name == u.name {
				errs = append(errs, fmt.Errorf("%s and %s are both %q: the three topics must differ", u.key, t.key, t.name))
			}
		}
	}
	if strings.TrimSpace(s.GroupID) == "" {
		errs = append(errs, fmt.Errorf("%s is empty", EnvGroupID))
	}
	if strings.TrimSpace(s.StorePath) == "" {
		errs = append(errs, fmt.Errorf("%s is empty", EnvStorePath))
	}
	if s.Attempts < 1 {
		errs = append(errs, fmt.Errorf("%s is %d: it must be at least 1 (1 means no retry)", EnvRetryAttempts, s.Attempts))
	}
	if s.MinDelay <= 0 {
		errs = append(errs, fmt.Errorf("%s is %v: it must be positive", EnvRetryMinDelay, s.MinDelay))
	}
	if s.MaxDelay < s.MinDelay {
		errs = append(errs, fmt.Errorf("%s (%v) is less than %s (%v)", EnvRetryMaxDelay, s.MaxDelay, EnvRetryMinDelay, s.MinDelay))
	}
	return errs
}
