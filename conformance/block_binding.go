package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

func init() {
	register("babelqueue_go.kafka_retry_tier", "KafkaTierSelector", runKafkaRetryTier)
	register("babelqueue_go.kafka_delayed_publish", "KafkaDelaySelector", runKafkaDelayedPublish)
	register("babelqueue_go.kafka_reinject_headers", "KafkaReinjectRewriter", runKafkaReinjectHeaders)
	register("babelqueue_go.kafka_reinject_wait", "KafkaReinjectWaiter", runKafkaReinjectWait)
	register("babelqueue_go.kafka_publish_from", "KafkaRepublisher", runKafkaPublishFrom)
	register("babelqueue_go.pulsar_routing", "PulsarRouter", runPulsarRouting)
	register("babelqueue_go.version_gate_settlement", "VersionGateSettler", runVersionGateSettlement)
}

func millis(ms []int64) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

type retryTierCase struct {
	Name           string  `json:"name"`
	Topic          string  `json:"topic"`
	TiersMs        []int64 `json:"tiers_ms"`
	AttemptsBefore int     `json:"attempts_before"`
	ExpectedTier   int     `json:"expected_tier"`
	ExpectedTopic  string  `json:"expected_topic"`
}

func runKafkaRetryTier(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c retryTierCase) string { return c.Name }, func(t KafkaTierSelector, c retryTierCase) error {
		n := t.RetryTier(millis(c.TiersMs), c.AttemptsBefore)
		if n != c.ExpectedTier {
			return fmt.Errorf("tiers %v, attempts before %d: tier %d, want %d", c.TiersMs, c.AttemptsBefore, n, c.ExpectedTier)
		}
		if topic := t.RetryTopic(c.Topic, n); topic != c.ExpectedTopic {
			return fmt.Errorf("retry topic %q, want %q", topic, c.ExpectedTopic)
		}
		return nil
	})
}

type delayedPublishCase struct {
	Name         string  `json:"name"`
	TiersMs      []int64 `json:"tiers_ms"`
	DelayMs      int64   `json:"delay_ms"`
	ExpectedTier *int    `json:"expected_tier"` // null: ErrDelayUnsupported, nothing written
}

func runKafkaDelayedPublish(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c delayedPublishCase) string { return c.Name }, func(d KafkaDelaySelector, c delayedPublishCase) error {
		n, ok := d.DelayTier(millis(c.TiersMs), time.Duration(c.DelayMs)*time.Millisecond)
		switch {
		case c.ExpectedTier == nil && ok:
			return fmt.Errorf("tiers %v, delay %dms: tier %d, want unsupported", c.TiersMs, c.DelayMs, n)
		case c.ExpectedTier != nil && !ok:
			return fmt.Errorf("tiers %v, delay %dms: unsupported, want tier %d", c.TiersMs, c.DelayMs, *c.ExpectedTier)
		case c.ExpectedTier != nil && n != *c.ExpectedTier:
			return fmt.Errorf("tiers %v, delay %dms: tier %d, want %d", c.TiersMs, c.DelayMs, n, *c.ExpectedTier)
		}
		return nil
	})
}

type reinjectHeadersCase struct {
	Name            string     `json:"name"`
	Headers         headerList `json:"headers"`
	ExpectedTarget  string     `json:"expected_target"`
	ExpectedHeaders headerList `json:"expected_headers"`
}

func runKafkaReinjectHeaders(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c reinjectHeadersCase) string { return c.Name }, func(r KafkaReinjectRewriter, c reinjectHeadersCase) error {
		target, out := r.ReinjectHeaders(slices.Clone([]Header(c.Headers)))
		if target != c.ExpectedTarget {
			return fmt.Errorf("target %q, want %q", target, c.ExpectedTarget)
		}
		return compareHeaderList(out, c.ExpectedHeaders)
	})
}

type reinjectWaitCase struct {
	Name              string `json:"name"`
	RecordTimestampMs int64  `json:"record_timestamp_ms"`
	NowMs             int64  `json:"now_ms"`
	TierMs            int64  `json:"tier_ms"`
	ExpectedWaitMs    int64  `json:"expected_wait_ms"`
}

func runKafkaReinjectWait(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c reinjectWaitCase) string { return c.Name }, func(w KafkaReinjectWaiter, c reinjectWaitCase) error {
		got := w.ReinjectWait(time.UnixMilli(c.RecordTimestampMs), time.UnixMilli(c.NowMs), time.Duration(c.TierMs)*time.Millisecond)
		if want := time.Duration(c.ExpectedWaitMs) * time.Millisecond; got != want {
			return fmt.Errorf("record at %d, now %d, tier %dms: wait %v, want %v", c.RecordTimestampMs, c.NowMs, c.TierMs, got, want)
		}
		return nil
	})
}

// recordJSON is a Kafka record in a manifest; a null or absent key or value
// is a null key or value.
type recordJSON struct {
	Topic      string     `json:"topic"`
	Key        *Payload   `json:"key"`
	Value      *Payload   `json:"value"`
	Headers    headerList `json:"headers"`
	HeaderKeys []string   `json:"header_keys"`
}

func (r recordJSON) bytesOf(s *Suite, p *Payload) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	b, err := p.Bytes(s)
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}

type publishFromCase struct {
	Name     string     `json:"name"`
	Reserved recordJSON `json:"reserved"`
	Queue    string     `json:"queue"`
	Body     Payload    `json:"body"`
	Expected recordJSON `json:"expected"`
}

func runKafkaPublishFrom(ctx context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c publishFromCase) string { return c.Name }, func(p KafkaRepublisher, c publishFromCase) error {
		key, err := c.Reserved.bytesOf(s, c.Reserved.Key)
		if err != nil {
			return err
		}
		value, err := c.Reserved.bytesOf(s, c.Reserved.Value)
		if err != nil {
			return err
		}
		body, err := c.Body.Bytes(s)
		if err != nil {
			return err
		}
		got, err := p.PublishFromRecord(ctx, PublishFromInput{
			Reserved: KafkaRecord{Topic: c.Reserved.Topic, Key: key, Value: value, Headers: c.Reserved.Headers},
			Queue:    c.Queue, Body: body,
		})
		if err != nil {
			return fmt.Errorf("publish from: %w", err)
		}
		wantKey, err := c.Expected.bytesOf(s, c.Expected.Key)
		if err != nil {
			return err
		}
		wantValue, err := c.Expected.bytesOf(s, c.Expected.Value)
		if err != nil {
			return err
		}
		var errs []string
		if got.Topic != c.Expected.Topic {
			errs = append(errs, fmt.Sprintf("topic %q, want %q", got.Topic, c.Expected.Topic))
		}
		if (got.Key == nil) != (wantKey == nil) || !bytes.Equal(got.Key, wantKey) {
			errs = append(errs, fmt.Sprintf("key %s, want %s", describeBytes(got.Key), describeBytes(wantKey)))
		}
		if (got.Value == nil) != (wantValue == nil) || !bytes.Equal(got.Value, wantValue) {
			errs = append(errs, fmt.Sprintf("value %s, want %s", describeBytes(got.Value), describeBytes(wantValue)))
		}
		if c.Expected.HeaderKeys != nil {
			keys := make([]string, 0, len(got.Headers))
			for _, h := range got.Headers {
				keys = append(keys, h.Key)
			}
			want := slices.Clone(c.Expected.HeaderKeys)
			slices.Sort(keys)
			slices.Sort(want)
			if !slices.Equal(keys, want) {
				errs = append(errs, fmt.Sprintf("header keys %q, want %q", keys, want))
			}
		}
		return joinErrs(errs)
	})
}

func describeBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

type routingCase struct {
	Name             string    `json:"name"`
	Property         optString `json:"property"`
	BodyURN          string    `json:"body_urn"`
	ExpectedRoute    string    `json:"expected_route"`
	ExpectedMismatch bool      `json:"expected_mismatch"`
}

func runPulsarRouting(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c routingCase) string { return c.Name }, func(r PulsarRouter, c routingCase) error {
		present := c.Property.Set && !c.Property.Null
		route, mismatch := r.RoutePulsar(c.Property.Value, present, c.BodyURN)
		if route != c.ExpectedRoute || mismatch != c.ExpectedMismatch {
			return fmt.Errorf("property %s, body %q: route %q mismatch %v, want %q mismatch %v",
				describeAttempts(attemptsValue{present, c.Property.Value}), c.BodyURN, route, mismatch, c.ExpectedRoute, c.ExpectedMismatch)
		}
		return nil
	})
}

type gateSettlementCase struct {
	Name               string     `json:"name"`
	Queue              string     `json:"queue"`
	Body               Payload    `json:"body"`
	Headers            headerList `json:"headers"`
	DeadLetter         bool       `json:"dead_letter"`
	MaxAttempts        int        `json:"max_attempts"`
	RedeliveryCount    int        `json:"redelivery_count"`
	UnknownURNStrategy string     `json:"unknown_urn_strategy"`
	Expected           struct {
		HandlerCalled bool `json:"handler_called"`
		Acked         bool `json:"acked"`
		Retried       bool `json:"retried"`
		// DeadLetterTopic is where the body goes as received; null: nothing is written.
		DeadLetterTopic *string `json:"dead_letter_topic"`
		HookVersion     string  `json:"hook_version"`
	} `json:"expected"`
}

func runVersionGateSettlement(ctx context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c gateSettlementCase) string { return c.Name }, func(g VersionGateSettler, c gateSettlementCase) error {
		body, err := c.Body.Bytes(s)
		if err != nil {
			return err
		}
		out, err := g.SettleVersionGated(ctx, GatedDelivery{
			Queue: c.Queue, Body: slices.Clone(body), Headers: slices.Clone([]Header(c.Headers)), DeadLetter: c.DeadLetter,
			MaxAttempts: c.MaxAttempts, RedeliveryCount: c.RedeliveryCount, UnknownURNStrategy: c.UnknownURNStrategy,
		})
		if err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		e := c.Expected
		var errs []string
		if out.HandlerCalled != e.HandlerCalled {
			errs = append(errs, fmt.Sprintf("handler called = %v, want %v", out.HandlerCalled, e.HandlerCalled))
		}
		if out.Acked != e.Acked {
			errs = append(errs, fmt.Sprintf("acknowledged = %v, want %v", out.Acked, e.Acked))
		}
		if out.Retried != e.Retried {
			errs = append(errs, fmt.Sprintf("retried = %v, want %v", out.Retried, e.Retried))
		}
		if out.HookVersion != e.HookVersion {
			errs = append(errs, fmt.Sprintf("OnSchemaVersionRejected version %q, want %q", out.HookVersion, e.HookVersion))
		}
		switch {
		case e.DeadLetterTopic == nil && len(out.Written) > 0:
			errs = append(errs, fmt.Sprintf("wrote %d records, want none", len(out.Written)))
		case e.DeadLetterTopic != nil && len(out.Written) != 1:
			errs = append(errs, fmt.Sprintf("wrote %d records, want 1 to %s", len(out.Written), *e.DeadLetterTopic))
		case e.DeadLetterTopic != nil:
			w := out.Written[0]
			if w.Topic != *e.DeadLetterTopic {
				errs = append(errs, fmt.Sprintf("dead letter written to %q, want %q", w.Topic, *e.DeadLetterTopic))
			}
			if !bytes.Equal(w.Value, body) {
				errs = append(errs, "dead letter body is not the body as received: "+diffBytes(w.Value, body))
			}
			for _, h := range c.Headers {
				if !slices.Contains(w.Headers, h) {
					errs = append(errs, fmt.Sprintf("dead letter lost header %s=%q", h.Key, h.Value))
				}
			}
		}
		return joinErrs(errs)
	})
}
