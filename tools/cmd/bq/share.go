package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// shareRow is the state of one partition in a share group (KIP-932): the
// share-partition start offset (records before it are all accepted or
// archived) and the broker's lag (records not yet settled in the group).
type shareRow struct {
	Topic       string `json:"topic"`
	Partition   int    `json:"partition"`
	Group       string `json:"group"`
	StartOffset int64  `json:"start_offset"`
	Lag         int64  `json:"lag"`
	Members     int    `json:"members"`
}

// shareState is what bq lag --share prints: the group's state, members and
// one row per partition.
type shareState struct {
	Group   string     `json:"group"`
	State   string     `json:"state"`
	Members int        `json:"members"`
	Rows    []shareRow `json:"partitions"`
}

// shareClient returns a franz-go client for the flags' cluster (kafka-go
// speaks no share-group API).
func (c *connFlags) shareClient(k *kafkaConn) (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.brokers...), kgo.DialTimeout(k.timeout), kgo.RequestTimeoutOverhead(k.reqTimeout)}
	if k.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(k.tls))
	}
	switch strings.ToLower(c.saslMech) {
	case "":
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.saslUser, Pass: c.saslPassword}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.saslUser, Pass: c.saslPassword}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.saslUser, Pass: c.saslPassword}.AsSha512Mechanism()))
	default:
		return nil, usagef("unknown SASL mechanism %q", c.saslMech)
	}
	return kgo.NewClient(opts...)
}

// shareLag describes share group group: its state and members
// (ShareGroupDescribe) and, per partition of topics (all it consumes when
// none is given), the start offset and lag (DescribeShareGroupOffsets v1).
func shareLag(ctx context.Context, cl *kgo.Client, group string, topics []string) (*shareState, error) {
	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.GroupIDs = []string{group}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe share group %q: %w", group, err)
	}
	st := &shareState{Group: group}
	members := map[string]int{} // topic/partition -> members assigned
	for _, g := range dresp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, fmt.Errorf("describe share group %q: %w", group, err)
		}
		st.State, st.Members = g.GroupState, len(g.Members)
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					members[tp.Topic+"/"+strconv.Itoa(int(p))]++
				}
			}
		}
	}
	oreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	for _, t := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic = t
		meta := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		meta.Topics = append(meta.Topics, mt)
		mresp, err := meta.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("partitions of %q: %w", t, err)
		}
		for _, mtp := range mresp.Topics {
			if err := kerr.ErrorForCode(mtp.ErrorCode); err != nil {
				return nil, fmt.Errorf("partitions of %q: %w", t, err)
			}
			for _, p := range mtp.Partitions {
				rt.Partitions = append(rt.Partitions, p.Partition)
			}
		}
		g.Topics = append(g.Topics, rt)
	}
	oreq.Groups = append(oreq.Groups, g)
	oresp, err := oreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("offsets of share group %q: %w", group, err)
	}
	for _, rg := range oresp.Groups {
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			return nil, fmt.Errorf("offsets of share group %q: %w", group, err)
		}
		for _, t := range rg.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("offset of share group %q on %s/%d: %w", group, t.Topic, p.Partition, err)
				}
				st.Rows = append(st.Rows, shareRow{Topic: t.Topic, Partition: int(p.Partition), Group: group,
					StartOffset: p.StartOffset, Lag: max(p.Lag, 0), Members: members[t.Topic+"/"+strconv.Itoa(int(p.Partition))]})
			}
		}
	}
	sort.Slice(st.Rows, func(i, j int) bool {
		a, b := st.Rows[i], st.Rows[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	if st.Rows == nil {
		st.Rows = []shareRow{}
	}
	return st, nil
}

func writeShare(w io.Writer, st *shareState) error {
	if _, err := fmt.Fprintf(w, "share group %s: state %s, %d members\n", st.Group, st.State, st.Members); err != nil {
		return err
	}
	var total int64
	table := make([][]string, 0, len(st.Rows))
	for _, r := range st.Rows {
		start := "-"
		if r.StartOffset >= 0 {
			start = strconv.FormatInt(r.StartOffset, 10)
		}
		table = append(table, []string{r.Topic, strconv.Itoa(r.Partition), start, strconv.FormatInt(r.Lag, 10), strconv.Itoa(r.Members)})
		total += r.Lag
	}
	if err := writeTable(w, []string{"TOPIC", "PARTITION", "START", "LAG", "MEMBERS"}, table); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total unsettled: %d\n", total)
	return err
}
