package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"

	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
)

// lagRow is the lag of one partition for a consumer group (Kafka) or of
// one subscription (Pulsar: Partition is -1, Lag the backlog).
type lagRow struct {
	Topic        string `json:"topic"`
	Partition    int    `json:"partition"`
	Group        string `json:"group"`
	Committed    *int64 `json:"committed,omitempty"`
	End          *int64 `json:"end,omitempty"`
	Lag          int64  `json:"lag"`
	Subscription string `json:"subscription,omitempty"`
}

const lagHelp = `Shows how far a consumer is behind.

Kafka: for --group, per partition, the committed offset, the end offset
(high-water mark) and the lag between them. Without --topic, every topic
the group committed on. A partition the group never committed on counts
from its first offset.

Pulsar: the backlog of each subscription of --topic (the admin REST API,
BQ_PULSAR_ADMIN_URL); --group picks one subscription.

` + connEnvHelp

const lagExamples = `  bq lag -b 127.0.0.1:9092 --group orders-workers
  bq lag -b 127.0.0.1:9092 --group orders-workers --topic orders --json
  bq lag -b pulsar://127.0.0.1:6650 --topic orders`

func newLagCmd() *cobra.Command {
	cmd := leaf("lag", "committed vs end offsets per partition (Kafka), backlog per subscription (Pulsar)", lagHelp, lagExamples)
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	group := fs.StringP("group", "g", "", "consumer group (Kafka, required) or subscription (Pulsar)")
	topics := topicsFlag(fs, "work topic (repeatable; Pulsar: required)")
	adminURL := fs.String("admin-url", "", "Pulsar admin REST URL (env BQ_PULSAR_ADMIN_URL)")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		var rows []lagRow
		if u.Kind == kindKafka {
			if *group == "" {
				return usagef("--group is required on Kafka")
			}
			k, err := cf.kafka(ctx, u)
			if err != nil {
				return err
			}
			defer k.close()
			if rows, err = k.lag(ctx, *group, *topics); err != nil {
				return err
			}
		} else {
			if len(*topics) == 0 {
				return usagef("--topic is required on Pulsar")
			}
			a, err := cf.pulsarAdmin(u, *adminURL)
			if err != nil {
				return err
			}
			for _, t := range *topics {
				st, _, err := a.stats(ctx, t)
				if err != nil {
					return err
				}
				for _, s := range st.subscriptions() {
					if *group == "" || s.Name == *group {
						rows = append(rows, lagRow{Topic: t, Partition: -1, Group: s.Name, Subscription: s.Name, Lag: s.Backlog})
					}
				}
			}
		}
		if rows == nil {
			rows = []lagRow{}
		}
		if *asJSON {
			return writeJSON(out, rows)
		}
		return writeLag(out, rows, u.Kind)
	}
	return cmd
}

// lag reads the committed and end offsets of group on topics (all the
// topics it committed on when none is given).
func (k *kafkaConn) lag(ctx context.Context, group string, topics []string) ([]lagRow, error) {
	req := &kafkago.OffsetFetchRequest{GroupID: group}
	if len(topics) > 0 {
		req.Topics = map[string][]int{}
		for _, t := range topics {
			parts, err := k.partitions(ctx, t)
			if err != nil {
				return nil, err
			}
			req.Topics[t] = parts
		}
	}
	res, err := bqkafka.FetchOffsets(ctx, k.client, req)
	if err != nil {
		return nil, fmt.Errorf("offsets of group %q: %w", group, err)
	}
	names := make([]string, 0, len(res.Topics))
	for t := range res.Topics {
		names = append(names, t)
	}
	sort.Strings(names)
	var rows []lagRow
	for _, t := range names {
		parts, err := k.partitions(ctx, t)
		if err != nil {
			return nil, err
		}
		first, next, err := k.bounds(ctx, t, parts)
		if err != nil {
			return nil, err
		}
		committed := map[int]int64{}
		for _, p := range parts {
			committed[p] = -1
		}
		for _, p := range res.Topics[t] {
			if p.Error != nil {
				return nil, fmt.Errorf("offset of group %q on %s/%d: %w", group, t, p.Partition, p.Error)
			}
			committed[p.Partition] = p.CommittedOffset
		}
		for _, p := range parts {
			end := next[p]
			row := lagRow{Topic: t, Partition: p, Group: group, End: &end}
			from := first[p]
			if c := committed[p]; c >= 0 {
				cc := c
				row.Committed = &cc
				from = max(c, first[p])
			}
			row.Lag = max(end-from, 0)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func writeLag(w io.Writer, rows []lagRow, kind string) error {
	if kind == kindPulsar {
		table := make([][]string, 0, len(rows))
		for _, r := range rows {
			table = append(table, []string{r.Topic, r.Subscription, strconv.FormatInt(r.Lag, 10)})
		}
		return writeTable(w, []string{"TOPIC", "SUBSCRIPTION", "BACKLOG"}, table)
	}
	var total int64
	table := make([][]string, 0, len(rows)+1)
	for _, r := range rows {
		c := "-"
		if r.Committed != nil {
			c = strconv.FormatInt(*r.Committed, 10)
		}
		table = append(table, []string{r.Topic, strconv.Itoa(r.Partition), c, strconv.FormatInt(*r.End, 10), strconv.FormatInt(r.Lag, 10)})
		total += r.Lag
	}
	if err := writeTable(w, []string{"TOPIC", "PARTITION", "COMMITTED", "END", "LAG"}, table); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total lag: %d\n", total)
	return err
}
