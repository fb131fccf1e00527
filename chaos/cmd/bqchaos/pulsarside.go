package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	pulsarclient "github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/babelqueue/babelqueue-go/chaos"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/babelqueue/babelqueue-go/pulsar"
)

// auditSubscription is a durable subscription on the DLQ, made before the
// run and never acknowledged, so that every dead letter stays readable for
// the read-back.
const auditSubscription = "chaos-audit"

// pulsarSide is the Pulsar half of the driver.
type pulsarSide struct {
	topic      string
	partitions int
	url, admin string
	tr         *pulsar.Transport
	http       *http.Client
	log        *slog.Logger
}

func newPulsarSide(run string, partitions int) (*pulsarSide, error) {
	url, admin := os.Getenv("BQ_PULSAR_URL"), os.Getenv("BQ_PULSAR_ADMIN_URL")
	if url == "" || admin == "" {
		return nil, errors.New("BQ_PULSAR_URL and BQ_PULSAR_ADMIN_URL must be set")
	}
	// The client logs every reconnection at Info; the driver keeps Warn.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tr, err := pulsar.New(pulsar.WithServiceURL(url), pulsar.WithSubscriptionType(pulsarclient.Shared), pulsar.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("pulsar transport: %w", err)
	}
	return &pulsarSide{topic: "chaos-" + run, partitions: partitions, url: url, admin: strings.TrimRight(admin, "/"),
		tr: tr, http: &http.Client{Timeout: 10 * time.Second}, log: log}, nil
}

func (p *pulsarSide) name() string                    { return "pulsar" }
func (p *pulsarSide) transport() babelqueue.Transport { return p.tr }
func (p *pulsarSide) workTopic() string               { return p.topic }
func (p *pulsarSide) close()                          { _ = p.tr.Close() }
func (p *pulsarSide) dlq() string                     { return p.topic + pulsar.DefaultDeadLetterSuffix }

func (p *pulsarSide) helpers() map[string]func(string) []string { return nil }

func (p *pulsarSide) consumerArgs(self, dir, proc string, work time.Duration, concurrency int) []string {
	return []string{self, "consumer", "-broker", "pulsar", "-topic", p.topic, "-dir", dir, "-proc", proc, "-work", work.String(),
		"-concurrency", strconv.Itoa(concurrency)}
}

func (p *pulsarSide) adminURL(topic, rest string) string {
	return p.admin + "/admin/v2/persistent/public/default/" + topic + rest
}

func (p *pulsarSide) do(ctx context.Context, method, url, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	return b, nil
}

// provision creates the work topic with its partitions and the audit
// subscription on the DLQ, repeating each step while the broker settles.
func (p *pulsarSide) provision(ctx context.Context) error {
	err := untilAccepted(ctx, p.log, "create partitioned topic "+p.topic, setupLimit, func() error {
		_, err := p.do(ctx, http.MethodPut, p.adminURL(p.topic, "/partitions"), strconv.Itoa(p.partitions))
		if err != nil && p.partitionsExist(ctx) {
			return nil // an earlier attempt created it before its answer was lost
		}
		return err
	})
	if err != nil {
		return err
	}
	cons, err := p.subscribeAudit(ctx, p.dlq(), pulsarclient.Exclusive)
	if err != nil {
		return err
	}
	cons.Close()
	return nil
}

// partitionsExist reports whether the work topic exists with the wanted
// partition count.
func (p *pulsarSide) partitionsExist(ctx context.Context) bool {
	b, err := p.do(ctx, http.MethodGet, p.adminURL(p.topic, "/partitions"), "")
	if err != nil {
		return false
	}
	var meta struct {
		Partitions int `json:"partitions"`
	}
	return json.Unmarshal(b, &meta) == nil && meta.Partitions == p.partitions
}

// subscribeAudit opens the durable audit subscription on topic, from its
// earliest message, repeating while the broker settles. The caller closes
// the consumer.
func (p *pulsarSide) subscribeAudit(ctx context.Context, topic string, kind pulsarclient.SubscriptionType) (pulsarclient.Consumer, error) {
	c, err := pulsarclient.NewClient(pulsarclient.ClientOptions{URL: p.url, Logger: pulsarlog.NewLoggerWithSlog(p.log)})
	if err != nil {
		return nil, fmt.Errorf("pulsar client: %w", err)
	}
	var cons pulsarclient.Consumer
	err = untilAccepted(ctx, p.log, "audit subscription on "+topic, setupLimit, func() error {
		var err error
		cons, err = c.Subscribe(pulsarclient.ConsumerOptions{Topic: topic, SubscriptionName: auditSubscription,
			Type: kind, SubscriptionInitialPosition: pulsarclient.SubscriptionPositionEarliest})
		return err
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return clientConsumer{cons, c}, nil
}

// clientConsumer closes its own client with the consumer.
type clientConsumer struct {
	pulsarclient.Consumer
	client pulsarclient.Client
}

func (c clientConsumer) Close() {
	c.Consumer.Close()
	c.client.Close()
}

type subStats struct {
	Subscriptions map[string]struct {
		MsgBacklog int64 `json:"msgBacklog"`
	} `json:"subscriptions"`
}

func (p *pulsarSide) backlog(ctx context.Context, topic, rest, sub string) (int64, error) {
	b, err := p.do(ctx, http.MethodGet, p.adminURL(topic, rest), "")
	if err != nil {
		return 0, err
	}
	var s subStats
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, fmt.Errorf("stats of %s: %w", topic, err)
	}
	st, ok := s.Subscriptions[sub]
	if !ok {
		return 0, fmt.Errorf("stats of %s: no subscription %q", topic, sub)
	}
	return st.MsgBacklog, nil
}

// lag is the backlog of the consumers' subscription on the work topic.
func (p *pulsarSide) lag(ctx context.Context) (int64, error) {
	return p.backlog(ctx, p.topic, "/partitioned-stats", subscription)
}

// deadLetterCount is the backlog of the audit subscription: every dead
// letter written.
func (p *pulsarSide) deadLetterCount(ctx context.Context) (int, error) {
	n, err := p.backlog(ctx, p.dlq(), "/stats", auditSubscription)
	return int(n), err
}

// readBack reads every dead letter through the audit subscription, without
// acknowledging, distinct by message id.
func (p *pulsarSide) readBack(ctx context.Context) (chaos.ReadBack, map[string]int, error) {
	var rb chaos.ReadBack
	cons, err := p.subscribeAudit(ctx, p.dlq(), pulsarclient.Exclusive)
	if err != nil {
		return rb, nil, err
	}
	defer cons.Close()
	want, err := p.deadLetterCount(ctx)
	if err != nil {
		return rb, nil, err
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < want && time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return rb, nil, ctx.Err()
			}
			break // nothing more within 5 s
		}
		key := m.ID().String()
		if seen[key] {
			continue
		}
		seen[key] = true
		c := chaos.Copy{ID: m.Properties()[wire.HeaderMessageID], At: m.PublishTime()}
		if c.ID == "" {
			if env, err := babelqueue.Decode(m.Payload()); err == nil {
				c.ID = env.Meta.ID
			}
		}
		rb.DeadLetters = append(rb.DeadLetters, c)
	}
	return rb, map[string]int{"dlq_backlog": want}, nil
}
