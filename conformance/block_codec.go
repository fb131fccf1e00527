package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

func init() {
	register("babelqueue_go.classification", "Classifier", runClassification)
	register("babelqueue_go.set_attempts", "AttemptsRewriter", runSetAttempts)
	register("babelqueue_go.dead_letter_shape", "DeadLetterShaper", runDeadLetterShape)
	register("babelqueue_go.poison_shape", "PoisonShaper", runPoisonShape)
	register("babelqueue_go.redrive_body", "DeadLetterClearer", runRedriveBody)
	register("babelqueue_go.kafka_header_projection", "KafkaProjector", runKafkaHeaderProjection)
}

type classificationCase struct {
	Name  string  `json:"name"`
	Body  Payload `json:"body"`
	Class Class   `json:"class"`
}

func runClassification(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c classificationCase) string { return c.Name }, func(cl Classifier, c classificationCase) error {
		body, err := c.Body.Bytes(s)
		if err != nil {
			return err
		}
		if got := cl.ClassifyBody(body); got != c.Class {
			return fmt.Errorf("class = %s, want %s", got, c.Class)
		}
		return nil
	})
}

// exactOutput compares produced bytes with the expected payload byte for byte.
func exactOutput(s *Suite, got []byte, want Payload) error {
	w, err := want.Bytes(s)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, w) {
		return fmt.Errorf("%s", diffBytes(got, w))
	}
	return nil
}

type setAttemptsCase struct {
	Name     string  `json:"name"`
	Input    Payload `json:"input"`
	Attempts int     `json:"attempts"`
	Output   Payload `json:"output"`
}

func runSetAttempts(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c setAttemptsCase) string { return c.Name }, func(r AttemptsRewriter, c setAttemptsCase) error {
		in, err := c.Input.Bytes(s)
		if err != nil {
			return err
		}
		got, err := r.SetAttempts(in, c.Attempts)
		if err != nil {
			return fmt.Errorf("set attempts: %w", err)
		}
		return exactOutput(s, got, c.Output)
	})
}

// deadLetterJSON is the manifest form of DeadLetter.
type deadLetterJSON struct {
	Reason        string    `json:"reason"`
	Error         optString `json:"error"`
	Exception     optString `json:"exception"`
	FailedAt      int64     `json:"failed_at"`
	OriginalQueue string    `json:"original_queue"`
	Attempts      int       `json:"attempts"`
	Lang          string    `json:"lang"`
}

func (d deadLetterJSON) value() DeadLetter {
	dl := DeadLetter{Reason: d.Reason, FailedAt: d.FailedAt, OriginalQueue: d.OriginalQueue, Attempts: d.Attempts, Lang: d.Lang}
	if d.Error.Set && !d.Error.Null {
		dl.Error = &d.Error.Value
	}
	if d.Exception.Set && !d.Exception.Null {
		dl.Exception = &d.Exception.Value
	}
	return dl
}

type shapeCase struct {
	Name       string         `json:"name"`
	Input      Payload        `json:"input"`
	DeadLetter deadLetterJSON `json:"dead_letter"`
	Output     Payload        `json:"output"`
}

func runDeadLetterShape(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c shapeCase) string { return c.Name }, func(sh DeadLetterShaper, c shapeCase) error {
		in, err := c.Input.Bytes(s)
		if err != nil {
			return err
		}
		got, err := sh.AnnotateDeadLetter(in, c.DeadLetter.value())
		if err != nil {
			return fmt.Errorf("annotate: %w", err)
		}
		return exactOutput(s, got, c.Output)
	})
}

func runPoisonShape(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c shapeCase) string { return c.Name }, func(sh PoisonShaper, c shapeCase) error {
		in, err := c.Input.Bytes(s)
		if err != nil {
			return err
		}
		return exactOutput(s, sh.PoisonBody(in, c.DeadLetter.value()), c.Output)
	})
}

type redriveCase struct {
	Name   string  `json:"name"`
	Input  Payload `json:"input"`
	Output Payload `json:"output"`
}

func runRedriveBody(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c redriveCase) string { return c.Name }, func(cl DeadLetterClearer, c redriveCase) error {
		in, err := c.Input.Bytes(s)
		if err != nil {
			return err
		}
		got, err := cl.ClearDeadLetter(in)
		if err != nil {
			return fmt.Errorf("clear dead letter: %w", err)
		}
		return exactOutput(s, got, c.Output)
	})
}

type headerProjectionCase struct {
	Name    string     `json:"name"`
	Input   Payload    `json:"input"`
	Headers headerList `json:"headers"`
}

func runKafkaHeaderProjection(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c headerProjectionCase) string { return c.Name }, func(p KafkaProjector, c headerProjectionCase) error {
		in, err := c.Input.Bytes(s)
		if err != nil {
			return err
		}
		got, err := p.KafkaHeaders(in)
		if err != nil {
			return fmt.Errorf("project: %w", err)
		}
		return compareHeaderList(got, c.Headers)
	})
}
