package main

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// guardBase is what the replay-count guard needs from a transport that
// removes a message by acknowledging it (Pulsar, in-memory).
type guardBase interface {
	babelqueue.Transport
	babelqueue.Forwarder
	babelqueue.HeaderRepublisher
	babelqueue.NegativeAcknowledger
}

// guardTransport wraps such a transport for babelqueue.Redrive: it
// remembers the headers of the message just popped (Redrive decides on a
// message right after popping it) so the selector can read its
// bq-redrive-count, and it stamps every move with the incremented count
// and the dead letter's out-of-band (non bq-) headers.
// Kept messages go back to the DLQ by Forward, unchanged.
type guardTransport struct {
	guardBase
	last map[string]string
}

func (g *guardTransport) Pop(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	m, err := g.guardBase.Pop(ctx, queue, timeout)
	g.last = nil
	if m != nil {
		g.last = m.Headers
	}
	return m, err
}

// countOf reads bq-redrive-count from headers (0 when absent or bad).
func countOf(h map[string]string) int {
	n, err := strconv.Atoi(strings.TrimSpace(h[headerRedriveCount]))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// PublishFrom is a move without extra headers.
func (g *guardTransport) PublishFrom(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage) error {
	return g.PublishFromWithHeaders(ctx, queue, body, from, nil)
}

// PublishFromWithHeaders is a move: the count of from, plus one, and the
// out-of-band headers of from ride along.
func (g *guardTransport) PublishFromWithHeaders(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	h := maps.Clone(headers)
	if h == nil {
		h = map[string]string{}
	}
	var fromHeaders map[string]string
	if from != nil {
		fromHeaders = from.Headers
	}
	for k, v := range fromHeaders {
		if _, set := h[k]; !set && !babelqueue.IsContractHeader(k) {
			h[k] = v // out-of-band headers such as traceparent ride along
		}
	}
	h[headerRedriveCount] = strconv.Itoa(countOf(fromHeaders) + 1)
	return g.guardBase.PublishFromWithHeaders(ctx, queue, body, from, h)
}
