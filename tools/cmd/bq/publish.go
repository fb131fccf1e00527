package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
)

// headerFlags collects repeated --header key=value flags.
type headerFlags map[string]string

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	h[k] = v
	return nil
}

const publishHelp = `Builds a BabelQueue envelope (SPEC 2) from a URN and JSON data and
publishes it with the contract headers/properties, plus any --header.
Prints the message id (meta.id).

` + connEnvHelp

const publishExamples = `  bq publish --broker kafka://127.0.0.1:9092 --queue orders \
      --urn urn:bq:orders:created --data '{"order_id":42}'
  echo '{"order_id":42}' | bq publish --broker pulsar://127.0.0.1:6650 \
      --queue orders --urn urn:bq:orders:created --data - --header traceparent=00-...`

// publishResult is the --json output of publish.
type publishResult struct {
	ID    string `json:"id"`
	Queue string `json:"queue"`
	URN   string `json:"urn"`
}

func runPublish(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := leafFlags("bq publish", "bq publish --broker URL --queue Q --urn URN [--data JSON|-] [--header k=v]... [--json]", publishHelp, publishExamples, errOut)
	var cf connFlags
	cf.register(fs)
	queue := fs.String("queue", "", "queue (topic) to publish to")
	urn := fs.String("urn", "", "message URN (the envelope's job)")
	data := fs.String("data", "{}", "JSON data, or - to read it from stdin")
	traceID := fs.String("trace-id", "", "trace id (default: a new one)")
	id := fs.String("id", "", "meta.id (default: a new UUID)")
	headers := headerFlags{}
	fs.Var(headers, "header", "out-of-band header key=value (repeatable)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseLeaf(fs, args, errOut); err != nil {
		return err
	}
	if strings.TrimSpace(*queue) == "" || strings.TrimSpace(*urn) == "" {
		return usageErrorf(fs, errOut, "--queue and --urn are required")
	}
	raw := []byte(*data)
	if *data == "-" {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
		if err != nil {
			return fmt.Errorf("read data from stdin: %w", err)
		}
		raw = b
	}
	if !json.Valid(raw) {
		return usageErrorf(fs, errOut, "--data is not valid JSON")
	}
	u, err := cf.url()
	if err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	if err := cf.check(u); err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	t, closeT, err := openTransport(ctx, &cf, u)
	if err != nil {
		return err
	}
	defer closeT()
	var mk []babelqueue.MakeOption
	if *traceID != "" {
		mk = append(mk, babelqueue.WithTraceID(*traceID))
	}
	if *id != "" {
		mk = append(mk, babelqueue.WithID(*id))
	}
	app, err := babelqueue.NewApp(t, babelqueue.WithDefaultQueue(*queue), babelqueue.WithLogger(discardLogger()))
	if err != nil {
		return err
	}
	msgID, err := app.PublishWithHeaders(ctx, *urn, json.RawMessage(raw), headers, babelqueue.ToQueue(*queue), babelqueue.WithEnvelopeOptions(mk...))
	if err != nil {
		return fmt.Errorf("publish to %q: %w", *queue, err)
	}
	if *asJSON {
		return writeJSON(out, publishResult{ID: msgID, Queue: *queue, URN: *urn})
	}
	fmt.Fprintln(out, msgID)
	return nil
}

// openTransport builds the babelqueue transport of the broker URL.
func openTransport(ctx context.Context, cf *connFlags, u brokerURL) (babelqueue.Transport, func(), error) {
	switch u.Kind {
	case kindKafka:
		k, err := cf.kafka(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		t, err := bqkafka.New(append(k.transportOptions(), bqkafka.WithLogger(discardLogger()))...)
		if err != nil {
			k.close()
			return nil, nil, err
		}
		return t, func() { t.Close(); k.close() }, nil
	default:
		p, err := cf.pulsar(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		t, err := p.transport()
		if err != nil {
			p.client.Close()
			return nil, nil, err
		}
		return t, func() { t.Close(); p.client.Close() }, nil
	}
}

var _ flag.Value = headerFlags{}
