package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"syscall"
	"time"

	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// errUnreachable is matched when no broker answered within the dial timeout.
var errUnreachable = errors.New("broker unreachable")

// kafkaMessage is a record as kafka-go reads it.
type kafkaMessage = kafkago.Message

// errRejected is matched when a broker rejects the connection settings
// (TLS, SASL): retrying cannot help, the flags must change.
var errRejected = errors.New("connection settings rejected")

// kafkaConn holds what every Kafka command needs: brokers, security and
// the bounded dial timeout, plus a kafka-go client for admin calls.
type kafkaConn struct {
	brokers []string
	tls     *tls.Config
	sasl    sasl.Mechanism
	timeout time.Duration
	// reqTimeout bounds each request after the first connection.
	reqTimeout time.Duration
	client     *kafkago.Client
}

// kafka connects to the Kafka cluster of the flags: it checks that some
// broker answers within the dial timeout (with TLS and SASL applied) so a
// wrong address fails fast with a clear error. Every later admin request
// is bounded by the request timeout.
func (c *connFlags) kafka(ctx context.Context, u brokerURL) (*kafkaConn, error) {
	if u.Kind != kindKafka {
		return nil, usagef("this command needs a Kafka broker (host:port or kafka://host:port), got %s", u.Kind)
	}
	tcfg, err := c.tlsConfig(u)
	if err != nil {
		return nil, err
	}
	k := &kafkaConn{brokers: u.Hosts, tls: tcfg, timeout: c.dialTimeout, reqTimeout: c.timeout}
	switch strings.ToLower(c.saslMech) {
	case "":
	case "plain":
		k.sasl = plain.Mechanism{Username: c.saslUser, Password: c.saslPassword}
	case "scram-sha-256", "scram-sha-512":
		algo := scram.SHA256
		if strings.EqualFold(c.saslMech, "scram-sha-512") {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, c.saslUser, c.saslPassword)
		if err != nil {
			return nil, fmt.Errorf("SASL/SCRAM: %w", err)
		}
		k.sasl = m
	}
	k.client = &kafkago.Client{
		Addr:    kafkago.TCP(k.brokers...),
		Timeout: c.timeout,
		Transport: &kafkago.Transport{
			DialTimeout: k.timeout,
			TLS:         k.tls,
			SASL:        k.sasl,
			ClientID:    "bq",
		},
	}
	if err := k.ping(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// dialer is a kafka-go dialer with the connection's security and timeout.
func (k *kafkaConn) dialer() *kafkago.Dialer {
	return &kafkago.Dialer{Timeout: k.timeout, DualStack: true, TLS: k.tls, SASLMechanism: k.sasl, ClientID: "bq"}
}

// ping dials the brokers in turn until one completes the handshake (TLS,
// SASL) and answers an API versions request, each attempt bounded by the
// dial timeout. When none answers, the error names the real cause: the
// settings a broker rejects (ErrConnectionRejected of the kafka module),
// a broker that accepted the connection but never answered, or one that
// cannot be reached.
func (k *kafkaConn) ping(ctx context.Context) error {
	var errs []error
	var why []string
	silent, allSilent := false, true
	for _, b := range k.brokers {
		err := pingBroker(ctx, k.dialer(), b, k.timeout)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			silent = true
			why = append(why, fmt.Sprintf("%s: no answer within %v", b, k.timeout))
		} else {
			allSilent = false
			why = append(why, b+": "+dialCause(err))
		}
		errs = append(errs, err)
	}
	// Settings are rejected at once (a TLS alert, a closed connection, a
	// SASL error); brokers that all stayed silent are not asked again.
	if !allSilent {
		if why := k.rejection(ctx); why != nil {
			return why
		}
	}
	hint := ""
	if silent {
		hint = " (a broker that accepts connections but does not answer: a frozen broker, or a port that is not a Kafka listener)"
	}
	return &unreachableError{msg: fmt.Sprintf("%v: no Kafka broker could be reached: %s%s", errUnreachable, strings.Join(why, "; "), hint), errs: errs}
}

// unreachableError says why each broker could not be reached, in a
// line; it matches errUnreachable and each dial error with errors.Is.
type unreachableError struct {
	msg  string
	errs []error
}

func (e *unreachableError) Error() string { return e.msg }

func (e *unreachableError) Unwrap() []error { return append([]error{errUnreachable}, e.errs...) }

// dialCause names why a dial failed in the words of the system
// ("connection refused", "no such host", ...), without the layers of
// client messages around it.
func dialCause(err error) string {
	var se syscall.Errno
	if errors.As(err, &se) {
		if se == syscall.ECONNREFUSED {
			return "connection refused (nothing listens on that port: is the broker running?)"
		}
		return se.Error()
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return "host not found: " + de.Error()
	}
	return err.Error()
}

// pingBroker dials addr and asks for its API versions, all within d.
func pingBroker(ctx context.Context, dialer *kafkago.Dialer, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	// A signal must not wait for the deadline: closing the connection
	// ends the blocked request at once.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if _, err = conn.ApiVersions(); err != nil && ctx.Err() != nil {
		// The deadline, or the close above, ended the request.
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// rejection asks the kafka module whether a broker rejects the
// connection settings, within the dial timeout; nil when none does.
func (k *kafkaConn) rejection(ctx context.Context) error {
	t, err := bqkafka.New(append(k.transportOptions(), bqkafka.WithLogger(discardLogger()))...)
	if err != nil {
		return nil
	}
	defer t.Close()
	cctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	if why := t.CheckConnection(cctx); errors.Is(why, bqkafka.ErrConnectionRejected) {
		return fmt.Errorf("%w: %w", errRejected, why)
	}
	return nil
}

// transportOptions are the babelqueue kafka.Transport options for this
// connection.
func (k *kafkaConn) transportOptions() []bqkafka.Option {
	opts := []bqkafka.Option{bqkafka.WithBrokers(k.brokers...)}
	if k.tls != nil {
		opts = append(opts, bqkafka.WithTLS(k.tls))
	}
	if k.sasl != nil {
		opts = append(opts, bqkafka.WithSASL(k.sasl))
	}
	return opts
}

// partitions returns the sorted partition ids of topic; a missing topic
// is an error.
func (k *kafkaConn) partitions(ctx context.Context, topic string) ([]int, error) {
	md, err := k.client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %q: %w", topic, err)
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if errors.Is(t.Error, kafkago.UnknownTopicOrPartition) {
			return nil, noTopicError{topic}
		}
		if t.Error != nil {
			return nil, fmt.Errorf("topic %q: %w", topic, t.Error)
		}
		ids := make([]int, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			ids = append(ids, p.ID)
		}
		sort.Ints(ids)
		if len(ids) == 0 {
			return nil, fmt.Errorf("topic %q has no partitions", topic)
		}
		return ids, nil
	}
	return nil, noTopicError{topic}
}

// noTopicError says that a topic does not exist.
type noTopicError struct{ topic string }

func (e noTopicError) Error() string { return fmt.Sprintf("topic %q does not exist", e.topic) }

// bounds returns the first and the next (high-water) offset of each
// partition.
func (k *kafkaConn) bounds(ctx context.Context, topic string, parts []int) (first, next map[int]int64, err error) {
	reqs := make([]kafkago.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafkago.FirstOffsetOf(p), kafkago.LastOffsetOf(p))
	}
	res, err := k.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets of %q: %w", topic, err)
	}
	first, next = map[int]int64{}, map[int]int64{}
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, nil, fmt.Errorf("list offsets of %q/%d: %w", topic, po.Partition, po.Error)
		}
		first[po.Partition], next[po.Partition] = po.FirstOffset, po.LastOffset
	}
	for _, p := range parts {
		if _, ok := next[p]; !ok {
			return nil, nil, fmt.Errorf("list offsets of %q: partition %d missing from the answer", topic, p)
		}
	}
	return first, next, nil
}

// committedOffsets returns the offsets group committed on the partitions
// of topic; a partition (or a group) without one is left out.
func (k *kafkaConn) committedOffsets(ctx context.Context, group, topic string, parts []int) (map[int]int64, error) {
	res, err := bqkafka.FetchOffsets(ctx, k.client, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if errors.Is(err, kafkago.GroupIdNotFound) {
		return map[int]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("offsets of group %q on %q: %w", group, topic, err)
	}
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("offset of group %q on %s/%d: %w", group, topic, p.Partition, p.Error)
		}
		if p.CommittedOffset >= 0 {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out, nil
}

// A range read gives up when maxIdleReads fetches in a row of
// readIdleTimeout each return nothing before the end of the range.
const (
	readIdleTimeout = 5 * time.Second
	maxIdleReads    = 6
)

// close releases the idle connections of the admin client.
func (k *kafkaConn) close() {
	if t, ok := k.client.Transport.(*kafkago.Transport); ok {
		t.CloseIdleConnections()
	}
}

// readRange calls fn for each record of topic/partition with from <=
// offset < to, in offset order, using a plain partition reader (no
// consumer group, nothing committed).
func (k *kafkaConn) readRange(ctx context.Context, topic string, partition int, from, to int64, fn func(kafkago.Message) error) error {
	if from >= to {
		return nil
	}
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:   k.brokers,
		Topic:     topic,
		Partition: partition,
		Dialer:    k.dialer(),
		MinBytes:  1,
		MaxBytes:  4 << 20,
		MaxWait:   500 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return fmt.Errorf("seek %s/%d to %d: %w", topic, partition, from, err)
	}
	idle := 0
	for {
		fctx, cancel := context.WithTimeout(ctx, readIdleTimeout)
		m, err := r.FetchMessage(fctx)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			// Nothing arrived: the records left before the high-water mark
			// may be control records or compacted away.
			if r.Offset() >= to {
				return nil
			}
			if idle++; idle < maxIdleReads {
				continue
			}
			return fmt.Errorf("read %s/%d: stalled at offset %d before the high-water mark %d", topic, partition, r.Offset(), to)
		}
		if err != nil {
			return fmt.Errorf("read %s/%d: %w", topic, partition, err)
		}
		idle = 0
		if m.Offset >= to {
			return nil
		}
		if err := fn(m); err != nil {
			return err
		}
		if m.Offset+1 >= to {
			return nil
		}
	}
}

// waitTopic waits (at most d) until every partition of a just-created
// topic has a leader, so the topic is usable when a command returns.
func (k *kafkaConn) waitTopic(ctx context.Context, topic string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		parts, err := k.partitions(ctx, topic)
		if err == nil {
			if _, _, err = k.bounds(ctx, topic, parts); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %q not usable after %v: %w", topic, d, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
