package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
	"github.com/spf13/cobra"
)

const publishHelp = `Builds a BabelQueue envelope (job, trace_id, data, meta, attempts) from a URN and JSON data and
publishes it with the contract headers/properties, plus any --header.
Prints the message id (meta.id).

--stdin publishes one message per input line: a whole envelope (a JSON
object with "job") is republished as it is; any other JSON object is the
data of a new envelope with --urn. Each line is validated before anything
is written.

The URN must follow the family's rule, urn:<namespace>:<name> without
blanks. Headers starting with "bq-" belong to the contract and cannot be
set with --header.

` + connEnvHelp

const publishExamples = `  bq publish -b 127.0.0.1:9092 -t orders --urn urn:bq:orders:created --data '{"order_id":42}'
  bq publish -b kafka://127.0.0.1:9092 -t orders --urn urn:bq:orders:created --key 42 --data '{"order_id":42}'
  jq -c '.[]' orders.json | bq publish -b pulsar://127.0.0.1:6650 -t orders --urn urn:bq:orders:created --stdin`

// publishResult is the --json output of publish.
type publishResult struct {
	ID    string `json:"id"`
	Queue string `json:"queue"`
	URN   string `json:"urn"`
}

// maxStdinLine bounds one line of --stdin.
const maxStdinLine = 16 << 20

// publishItem is one message to publish.
type publishItem struct {
	urn  string
	data json.RawMessage
	// env is set when the line is a whole envelope.
	env []byte
}

func newPublishCmd() *cobra.Command {
	cmd := leaf("publish", "publish envelopes built from a URN and JSON data (or read from stdin)", publishHelp, publishExamples)
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	queue := topicFlag(fs, "work topic (queue) to publish to")
	urn := fs.StringP("urn", "u", "", "message URN (the envelope's job)")
	data := fs.StringP("data", "d", "{}", "JSON object of data, or - to read it from stdin")
	fromStdin := fs.Bool("stdin", false, "publish one envelope or data object per stdin line")
	key := fs.StringP("key", "k", "", "message key (Kafka partitioning and ordering, Pulsar key)")
	traceID := fs.String("trace-id", "", "trace id (default: a new one)")
	id := fs.String("id", "", "meta.id (default: a new UUID; not with --stdin)")
	headers := fs.StringToStringP("header", "H", nil, "out-of-band header key=value (repeatable; bq- headers are refused)")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		if strings.TrimSpace(*queue) == "" {
			return usagef("--topic (-t) is required")
		}
		for k := range *headers {
			if strings.HasPrefix(strings.ToLower(k), "bq-") {
				return usagef("--header %s: bq- headers belong to the contract and are set by bq, not by hand", k)
			}
			if strings.TrimSpace(k) == "" {
				return usagef("--header: blank key")
			}
		}
		var items []publishItem
		switch {
		case *fromStdin:
			if *id != "" {
				return usagef("--id applies to one message; with --stdin every message gets its own")
			}
			var err error
			if items, err = readPublishLines(stdin, *urn); err != nil {
				return err
			}
		default:
			if *urn == "" {
				return usagef("--urn is required (or --stdin with envelopes)")
			}
			raw := []byte(*data)
			if *data == "-" {
				b, err := io.ReadAll(io.LimitReader(stdin, maxStdinLine))
				if err != nil {
					return fmt.Errorf("read data from stdin: %w", err)
				}
				raw = bytes.TrimSpace(b)
			}
			if err := checkData(raw); err != nil {
				return usagef("--data: %v", err)
			}
			items = []publishItem{{urn: *urn, data: raw}}
		}
		for i, it := range items {
			if it.env != nil {
				continue
			}
			if err := wire.ValidURN(it.urn); err != nil {
				if *fromStdin {
					return usagef("line %d: %v", i+1, err)
				}
				return usagef("--urn: %v", err)
			}
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		t, closeT, err := openTransport(ctx, &cf, u)
		if err != nil {
			return err
		}
		defer closeT()
		app, err := babelqueue.NewApp(t, babelqueue.WithDefaultQueue(*queue), babelqueue.WithLogger(discardLogger()))
		if err != nil {
			return err
		}
		for i, it := range items {
			pctx, cancel := context.WithTimeout(ctx, cf.timeout)
			msgID, urnOut, err := publishOne(pctx, t, app, *queue, *key, *traceID, *id, *headers, it)
			cancel()
			if err != nil {
				if len(items) > 1 {
					return fmt.Errorf("line %d (%d of %d published before it): %w", i+1, i, len(items), err)
				}
				return err
			}
			if *asJSON {
				if err := writeJSONLine(out, publishResult{ID: msgID, Queue: *queue, URN: urnOut}); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(out, msgID)
			}
		}
		return nil
	}
	return cmd
}

// publishOne writes one item: a new envelope through the App, or a whole
// envelope as it is, with its contract headers.
func publishOne(ctx context.Context, t babelqueue.Transport, app *babelqueue.App, queue, key, traceID, id string, headers map[string]string, it publishItem) (string, string, error) {
	if it.env != nil {
		env, err := babelqueue.Decode(it.env)
		if err != nil {
			return "", "", err
		}
		out := &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: string(it.env), Headers: headers}
		if key != "" {
			out.Key = []byte(key)
		}
		if _, err := t.Send(ctx, out); err != nil {
			return "", "", fmt.Errorf("publish to %q: %w", queue, err)
		}
		return env.Meta.ID, env.URN(), nil
	}
	var mk []babelqueue.MakeOption
	if traceID != "" {
		mk = append(mk, babelqueue.WithTraceID(traceID))
	}
	if id != "" {
		mk = append(mk, babelqueue.WithID(id))
	}
	opts := []babelqueue.PublishOption{babelqueue.ToQueue(queue), babelqueue.WithEnvelopeOptions(mk...)}
	if key != "" {
		opts = append(opts, babelqueue.WithKey([]byte(key)))
	}
	msgID, err := app.PublishWithHeaders(ctx, it.urn, it.data, headers, opts...)
	if err != nil {
		return "", "", fmt.Errorf("publish to %q: %w", queue, err)
	}
	return msgID, it.urn, nil
}

// checkData accepts a JSON object only: the envelope's data is an object.
func checkData(raw []byte) error {
	if !json.Valid(raw) {
		return jsonError(raw)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%s is not a JSON object (data is always an object)", abbreviate(string(t), 40))
	}
	return nil
}

// jsonError says where raw, which is not valid JSON, goes wrong: the
// line, the column and the byte offset of the first bad byte (or of the
// end, when raw stops early) and what the decoder expected.
func jsonError(raw []byte) error {
	var v any
	err := json.Unmarshal(raw, &v)
	off := int64(len(raw))
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	why := "unexpected end of JSON input"
	if err != nil {
		why = err.Error()
	}
	// Offset counts the bytes read, the bad one included.
	bad := max(0, min(int(off), len(raw))-1)
	if why == "unexpected end of JSON input" {
		bad = len(raw)
	}
	line, col := 1, 1
	for _, b := range raw[:bad] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	at := fmt.Sprintf("line %d, column %d (byte %d)", line, col, bad)
	if bad >= len(raw) {
		at = fmt.Sprintf("the end, line %d, column %d (byte %d): it stops early", line, col, bad)
	}
	return fmt.Errorf("not valid JSON at %s: %s", at, why)
}

// readPublishLines reads --stdin: each non-empty line is an envelope (an
// object with "job" or "urn") or a data object published under urn.
func readPublishLines(r io.Reader, urn string) ([]publishItem, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxStdinLine)
	var items []publishItem
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := checkData(line); err != nil {
			return nil, usagef("stdin line %d: %v", n, err)
		}
		var probe struct {
			Job *string `json:"job"`
			URN *string `json:"urn"`
		}
		_ = json.Unmarshal(line, &probe)
		if probe.Job != nil || probe.URN != nil {
			env, err := babelqueue.Decode(line)
			if err != nil {
				return nil, usagef("stdin line %d: not a valid envelope: %v", n, err)
			}
			if err := wire.ValidURN(env.URN()); err != nil {
				return nil, usagef("stdin line %d: %v", n, err)
			}
			if err := wire.CheckOutbound(line); err != nil {
				return nil, usagef("stdin line %d: %v", n, err)
			}
			items = append(items, publishItem{env: append([]byte(nil), line...)})
			continue
		}
		if urn == "" {
			return nil, usagef("stdin line %d is data without a URN: give --urn, or whole envelopes", n)
		}
		items = append(items, publishItem{urn: urn, data: json.RawMessage(append([]byte(nil), line...))})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(items) == 0 {
		return nil, usagef("--stdin: no message on stdin")
	}
	return items, nil
}

// abbreviate shortens s for a message.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
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
