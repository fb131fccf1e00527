//go:build integration

package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// tierRecords are n records for the tier topic of topic stamped ts (the
// producer's clock), each naming topic as its original topic.
func tierRecords(topic string, tier time.Duration, ts time.Time, n int) []kafkago.Message {
	out := make([]kafkago.Message, n)
	for i := range out {
		out[i] = kafkago.Message{Topic: RetryTopic(topic, 1), Key: []byte{'k'}, Value: []byte(fmt.Sprintf(`{"n":%d}`, i)), Time: ts,
			Headers: []kafkago.Header{h(wire.HeaderOriginalTopic, topic), h(wire.HeaderDelay, fmt.Sprint(tier.Milliseconds()))}}
	}
	return out
}

// createTopic creates a one-partition topic with the given
// message.timestamp.type.
func createTopic(t *testing.T, name, timestampType string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adminClient(t).CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{
		Topic: name, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "message.timestamp.type", ConfigValue: timestampType}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Errors[name]; err != nil && !errors.Is(err, kafkago.TopicAlreadyExists) {
		t.Fatal(err)
	}
}

// TestIntegrationReinjectLogAppendTimeWaitsFromTheAppendTime writes records
// stamped an hour ago by their producer to a LogAppendTime tier (as
// EnsureTopics creates it): the re-injector must hold them for the whole
// tier from the broker's append time, not carry them back at once as their
// producer timestamp would have it. It runs on the plain, TLS and SASL over
// TLS listeners: the re-injector's connections read the batch headers
// below kafka-go, under TLS set up by the tap's own dial.
func TestIntegrationReinjectLogAppendTimeWaitsFromTheAppendTime(t *testing.T) {
	const tier = 4 * time.Second
	listeners := []struct {
		name string
		opts func(t *testing.T) []Option
	}{
		{"plaintext", func(t *testing.T) []Option { return nil }},
		{"tls", func(t *testing.T) []Option {
			brokers, ca := brokertest.KafkaTLS(t)
			return []Option{WithBrokers(brokers...), WithTLS(brokertest.TLSConfig(t, ca))}
		}},
		{"sasl-tls", func(t *testing.T) []Option {
			brokers, user, pass, ca := brokertest.KafkaSASLTLS(t)
			return []Option{WithBrokers(brokers...), WithTLS(brokertest.TLSConfig(t, ca)), WithSASLSCRAM(SCRAMSHA512, user, pass)}
		}},
	}
	for _, l := range listeners {
		t.Run(l.name, func(t *testing.T) {
			topic := uniq("it-lat-" + l.name)
			ensure(t, itTransport(t, WithRetryTiers(tier)), topic, 1)
			runReinjector(t, topic, append([]Option{WithRetryTiers(tier)}, l.opts(t)...)...)

			old := time.Now().Add(-time.Hour)
			before := time.Now()
			produceRaw(t, tierRecords(topic, tier, old, 3)...)
			after := time.Now()

			got := readTopic(t, topic, 3, 30*time.Second, 0)
			if len(got) != 3 {
				t.Fatalf("re-injected %d records within 30s, want 3", len(got))
			}
			for _, m := range got {
				// The re-injector stamps its copy with the time it wrote it;
				// the broker appended the tier record between before and after.
				if wrote := m.Time; wrote.Before(before.Add(tier)) || wrote.After(after.Add(tier+5*time.Second)) {
					t.Errorf("record %s re-injected at %s, %v after its append (between %s and %s); want the tier %v after it",
						m.Value, wrote.Format(time.StampMilli), wrote.Sub(after).Round(time.Millisecond),
						before.Format(time.StampMilli), after.Format(time.StampMilli), tier)
				}
			}
		})
	}
}

// TestIntegrationReinjectCreateTimeTrustsTheProducerClock keeps the
// CreateTime rule: on a tier topic with message.timestamp.type=CreateTime
// the wait is anchored on the producer's timestamp, clamped to
// [now, now+tier]: an old record is carried at once, a future-dated one
// waits one tier.
func TestIntegrationReinjectCreateTimeTrustsTheProducerClock(t *testing.T) {
	const tier = 8 * time.Second
	for _, c := range []struct {
		name   string
		offset time.Duration // producer timestamp minus now
		held   bool          // whether the record waits a whole tier
	}{
		{"old", -time.Hour, false},
		{"future", 10 * time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := uniq("it-ct-" + c.name)
			createTopic(t, topic, "CreateTime")
			createTopic(t, RetryTopic(topic, 1), "CreateTime")
			runReinjector(t, topic, WithRetryTiers(tier))

			before := time.Now()
			produceRaw(t, tierRecords(topic, tier, before.Add(c.offset), 1)...)
			after := time.Now()

			got := readTopic(t, topic, 1, 30*time.Second, 0)
			if len(got) != 1 {
				t.Fatalf("re-injected %d records within 30s, want 1", len(got))
			}
			wrote := got[0].Time
			if c.held && wrote.Before(before.Add(tier)) {
				t.Fatalf("future-dated record re-injected %v after it was written, want at least the tier %v", wrote.Sub(before), tier)
			}
			if !c.held && wrote.After(after.Add(tier/2)) {
				t.Fatalf("old record re-injected %v after it was written, want at once (well within the tier %v)", wrote.Sub(after), tier)
			}
		})
	}
}

// TestIntegrationReinjectBacklogAgeFromTheAppendTime: the backlog sampler
// counts the age of a LogAppendTime tier's oldest record from its append
// time, as the worker counts its wait, so a record stamped an hour ago by
// its producer, still waiting out a one-minute tier, shows a young age and
// no lag.
func TestIntegrationReinjectBacklogAgeFromTheAppendTime(t *testing.T) {
	const tier = time.Minute
	topic := uniq("it-lat-backlog")
	ensure(t, itTransport(t, WithRetryTiers(tier)), topic, 1)
	written := time.Now()
	produceRaw(t, tierRecords(topic, tier, written.Add(-time.Hour), 2)...)

	rec := &backlogRecorder{}
	runReinjector(t, topic, WithRetryTiers(tier), WithReinjectHooks(rec), WithReinjectBacklogInterval(200*time.Millisecond))
	s := rec.waitFor(t, 30*time.Second, func(s []driver.ReinjectBacklog) bool {
		return len(s) == 1 && s[0].Err == nil && s[0].Backlog == 2
	})
	if age := s[0].OldestAge; age <= 0 || age > time.Since(written)+time.Second || s[0].OldestLag != 0 {
		t.Fatalf("oldest age %v lag %v, want at most the %v since the records were appended and no lag",
			age, s[0].OldestLag, time.Since(written).Round(time.Millisecond))
	}
}
