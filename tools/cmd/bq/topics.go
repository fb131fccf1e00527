package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
)

// ensureResult is the --json output of topics ensure.
type ensureResult struct {
	Topic     string   `json:"topic"`
	Retry     []string `json:"retry_topics"`
	DLQ       string   `json:"dlq"`
	Partition int      `json:"partitions"`
	// Requested is --partitions; Mismatch is set when the topic existed
	// with another count (topics that exist are never changed).
	Requested int    `json:"requested_partitions"`
	Mismatch  string `json:"mismatch,omitempty"`
}

const topicsEnsureHelp = `Creates, when missing, a Kafka work topic, one retry topic per tier of
--tiers (<topic>.retry.<n>, message.timestamp.type=LogAppendTime) and the
dead-letter topic <topic>.dlq, the retry and dead-letter topics with the
partition count the work topic really has. Topics that exist are left as
they are, so it is safe to run again; a work topic that exists with
another partition count than --partitions is reported (exit code 1).

Retry tiers are declared by the producers (kafka.WithRetryTiers); like
the library, this command creates none unless --tiers says so
("recommended" is the library's DefaultRetryTiers: 5s,30s,5m,30m).
Tier topics that already exist are listed.

` + connEnvHelp

const topicsEnsureExamples = `  bq topics ensure -b 127.0.0.1:9092 --topic orders --partitions 6 --tiers 1s,10s
  bq topics ensure -b kafka://127.0.0.1:9092 --topic orders --tiers recommended --json`

func newTopicsEnsureCmd() *cobra.Command {
	cmd := leaf("ensure", "create a work topic, its retry tiers and its DLQ (idempotent)", topicsEnsureHelp, topicsEnsureExamples)
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	topics := topicsFlag(fs, "work topic (repeatable, or comma-separated)")
	partitions := fs.IntP("partitions", "p", 1, "partitions of a work topic that does not exist yet")
	replication := fs.Int("replication", 1, "replication factor")
	tiersFlag := fs.String("tiers", "none", `retry tiers to create, ascending durations, "recommended" or "none"`)
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		if len(*topics) == 0 {
			return usagef("--topic is required")
		}
		if *partitions <= 0 || *replication <= 0 {
			return usagef("--partitions and --replication must be positive")
		}
		tiers, err := parseTiers(*tiersFlag)
		if err != nil {
			return usagef("%v", err)
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		k, err := cf.kafka(ctx, u)
		if err != nil {
			return err
		}
		defer k.close()
		opts := append(k.transportOptions(), bqkafka.WithLogger(discardLogger()))
		if len(tiers) > 0 {
			opts = append(opts, bqkafka.WithRetryTiers(tiers...))
		}
		t, err := bqkafka.New(opts...)
		if err != nil {
			return err
		}
		defer t.Close()
		var results []ensureResult
		mismatches := 0
		for _, topic := range *topics {
			ectx, cancel := context.WithTimeout(ctx, cf.timeout)
			err := t.EnsureTopics(ectx, topic, *partitions, *replication)
			cancel()
			if err != nil {
				return fmt.Errorf("ensure %q: %w", topic, err)
			}
			parts, err := k.partitions(ctx, topic)
			if err != nil {
				return err
			}
			r := ensureResult{Topic: topic, DLQ: topic + bqkafka.DeadLetterSuffix, Partition: len(parts), Requested: *partitions, Retry: []string{}}
			if len(parts) != *partitions {
				mismatches++
				r.Mismatch = fmt.Sprintf("exists with %s, not the %d asked; left as it is", nOf(len(parts), "partition", ""), *partitions)
			}
			names, _, err := k.listTopics(ctx)
			if err != nil {
				return err
			}
			r.Retry, _ = tierTopicsOf(topic, names)
			if r.Retry == nil {
				r.Retry = []string{}
			}
			for _, name := range append(append([]string(nil), r.Retry...), r.DLQ) {
				if err := k.waitTopic(ctx, name, cf.timeout); err != nil {
					return err
				}
			}
			results = append(results, r)
		}
		if *asJSON {
			if err := writeJSON(out, results); err != nil {
				return err
			}
		} else {
			for _, r := range results {
				fmt.Fprintf(out, "%s: %s, retry topics [%s], dead-letter topic %s\n", r.Topic, nOf(r.Partition, "partition", ""), strings.Join(r.Retry, ", "), r.DLQ)
				if r.Mismatch != "" {
					fmt.Fprintf(out, "%s: warning: %s\n", r.Topic, r.Mismatch)
				}
			}
		}
		if mismatches > 0 {
			return fmt.Errorf("%s with another partition count than --partitions %d (Kafka cannot lower it; raise it with kafka-topics --alter)", nOf(mismatches, "topic exists", "topics exist"), *partitions)
		}
		return nil
	}
	return cmd
}

// topicRow is one line of topics list.
type topicRow struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Kind       string `json:"kind"`
}

// topicKind says what a topic is for BabelQueue: work, retry tier,
// dead letters, or a redrive journal.
func topicKind(name string) string {
	switch {
	case strings.HasSuffix(name, bqkafka.DeadLetterSuffix):
		return "dlq"
	case strings.HasSuffix(name, ".journal"):
		return "journal"
	}
	if i := strings.LastIndex(name, ".retry."); i > 0 {
		if _, err := strconv.Atoi(name[i+len(".retry."):]); err == nil {
			return "retry"
		}
	}
	return "work"
}

const topicsListHelp = `Lists the topics of the cluster with their partition count and what each
is for BabelQueue (work, retry, dlq, journal). Kafka: from the cluster
metadata. Pulsar: from the admin REST API (BQ_PULSAR_ADMIN_URL, default
http://<broker host>:8080) in --namespace.

` + connEnvHelp

func newTopicsListCmd() *cobra.Command {
	cmd := leaf("list", "list topics with partitions and kind", topicsListHelp, "  bq topics list -b 127.0.0.1:9092\n  bq topics list -b pulsar://127.0.0.1:6650 --namespace public/default --json")
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	prefix := fs.String("prefix", "", "only topics starting with this")
	ns := fs.String("namespace", "public/default", "Pulsar: tenant/namespace")
	adminURL := fs.String("admin-url", "", "Pulsar admin REST URL (env BQ_PULSAR_ADMIN_URL)")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		var rows []topicRow
		if u.Kind == kindKafka {
			k, err := cf.kafka(ctx, u)
			if err != nil {
				return err
			}
			defer k.close()
			names, parts, err := k.listTopics(ctx)
			if err != nil {
				return err
			}
			for _, n := range names {
				rows = append(rows, topicRow{Topic: n, Partitions: parts[n], Kind: topicKind(n)})
			}
		} else {
			a, err := cf.pulsarAdmin(u, *adminURL)
			if err != nil {
				return err
			}
			if rows, err = a.listTopics(ctx, *ns); err != nil {
				return err
			}
		}
		kept := rows[:0]
		for _, r := range rows {
			if strings.HasPrefix(r.Topic, *prefix) {
				kept = append(kept, r)
			}
		}
		rows = kept
		if *asJSON {
			if rows == nil {
				rows = []topicRow{}
			}
			return writeJSON(out, rows)
		}
		table := make([][]string, 0, len(rows))
		for _, r := range rows {
			table = append(table, []string{r.Topic, strconv.Itoa(r.Partitions), r.Kind})
		}
		return writeTable(out, []string{"TOPIC", "PARTITIONS", "KIND"}, table)
	}
	return cmd
}

// partitionInfo is one partition in topics describe.
type partitionInfo struct {
	Partition int     `json:"partition"`
	Leader    int     `json:"leader"`
	Replicas  []int   `json:"replicas"`
	ISR       []int   `json:"isr"`
	First     int64   `json:"first_offset"`
	Next      int64   `json:"next_offset"`
	Error     *string `json:"error,omitempty"`
}

// tierInfo is one retry tier found for a work topic.
type tierInfo struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	// Delay is the bq-delay of the newest record, "" when unknown.
	Delay string `json:"delay,omitempty"`
}

// topicDescription is the output of topics describe.
type topicDescription struct {
	Topic      string            `json:"topic"`
	Kind       string            `json:"kind"`
	Partitions []partitionInfo   `json:"partitions"`
	Configs    map[string]string `json:"configs"`
	Tiers      []tierInfo        `json:"tiers"`
	TierGaps   []string          `json:"tier_gaps,omitempty"`
	DLQ        string            `json:"dlq,omitempty"`
	Subs       []subscription    `json:"subscriptions,omitempty"`
}

const topicsDescribeHelp = `Describes a topic: its partitions (leader, replicas, in-sync replicas,
first and next offset), the configs set on it (not the broker defaults;
--all-configs for every one), and, for a work topic, the retry tiers
found (<topic>.retry.<n> topics that exist, with the bq-delay of each
tier's newest record) and its dead-letter topic. Pulsar: partitions,
backlog and subscriptions from the admin REST API.

` + connEnvHelp

func newTopicsDescribeCmd() *cobra.Command {
	cmd := leaf("describe", "show partitions, configs and the retry tiers found of a topic", topicsDescribeHelp, "  bq topics describe -b 127.0.0.1:9092 --topic orders\n  bq topics describe -b 127.0.0.1:9092 -t orders --all-configs --json")
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	topic := topicFlag(fs, "topic to describe")
	allConfigs := fs.Bool("all-configs", false, "Kafka: show every config, defaults included")
	adminURL := fs.String("admin-url", "", "Pulsar admin REST URL (env BQ_PULSAR_ADMIN_URL)")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		if *topic == "" {
			return usagef("--topic is required")
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		var d *topicDescription
		if u.Kind == kindKafka {
			k, err := cf.kafka(ctx, u)
			if err != nil {
				return err
			}
			defer k.close()
			if d, err = k.describe(ctx, *topic, *allConfigs); err != nil {
				return err
			}
		} else {
			a, err := cf.pulsarAdmin(u, *adminURL)
			if err != nil {
				return err
			}
			if d, err = a.describe(ctx, *topic); err != nil {
				return err
			}
		}
		if *asJSON {
			return writeJSON(out, d)
		}
		return d.write(out)
	}
	return cmd
}

// describe gathers a Kafka topic's description.
func (k *kafkaConn) describe(ctx context.Context, topic string, allConfigs bool) (*topicDescription, error) {
	md, err := k.client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %q: %w", topic, err)
	}
	d := &topicDescription{Topic: topic, Kind: topicKind(topic), Configs: map[string]string{}, Tiers: []tierInfo{}, Partitions: []partitionInfo{}}
	var ids []int
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("topic %q: %w", topic, t.Error)
		}
		for _, p := range t.Partitions {
			pi := partitionInfo{Partition: p.ID, Leader: p.Leader.ID, Replicas: brokerIDs(p.Replicas), ISR: brokerIDs(p.Isr)}
			if p.Error != nil {
				s := p.Error.Error()
				pi.Error = &s
			}
			d.Partitions = append(d.Partitions, pi)
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return nil, noTopicError{topic}
	}
	sort.Slice(d.Partitions, func(i, j int) bool { return d.Partitions[i].Partition < d.Partitions[j].Partition })
	first, next, err := k.bounds(ctx, topic, ids)
	if err != nil {
		return nil, err
	}
	for i := range d.Partitions {
		p := d.Partitions[i].Partition
		d.Partitions[i].First, d.Partitions[i].Next = first[p], next[p]
	}
	cres, err := k.client.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: []kafkago.DescribeConfigRequestResource{{ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic}}})
	if err != nil {
		return nil, fmt.Errorf("configs of %q: %w", topic, err)
	}
	for _, r := range cres.Resources {
		if r.Error != nil {
			return nil, fmt.Errorf("configs of %q: %w", topic, r.Error)
		}
		for _, c := range r.ConfigEntries {
			if allConfigs || !c.IsDefault && c.ConfigSource == 1 { // 1: DYNAMIC_TOPIC_CONFIG, set on the topic
				d.Configs[c.ConfigName] = c.ConfigValue
			}
		}
	}
	if d.Kind == "work" {
		names, parts, err := k.listTopics(ctx)
		if err != nil {
			return nil, err
		}
		tiers, gaps := tierTopicsOf(topic, names)
		for _, t := range tiers {
			ti := tierInfo{Topic: t, Partitions: parts[t]}
			tctx, cancel := context.WithTimeout(ctx, 2*readIdleTimeout)
			if delay, ok, err := k.newestDelay(tctx, t); err == nil && ok {
				ti.Delay = delay.String()
			}
			cancel()
			d.Tiers = append(d.Tiers, ti)
		}
		d.TierGaps = gaps
		if _, ok := parts[topic+bqkafka.DeadLetterSuffix]; ok {
			d.DLQ = topic + bqkafka.DeadLetterSuffix
		}
	}
	return d, nil
}

func brokerIDs(bs []kafkago.Broker) []int {
	ids := make([]int, 0, len(bs))
	for _, b := range bs {
		ids = append(ids, b.ID)
	}
	return ids
}

// write prints a description for people.
func (d *topicDescription) write(w io.Writer) error {
	fmt.Fprintf(w, "topic: %s (%s), %s\n\n", d.Topic, d.Kind, nOf(len(d.Partitions), "partition", ""))
	rows := make([][]string, 0, len(d.Partitions))
	for _, p := range d.Partitions {
		errText := ""
		if p.Error != nil {
			errText = *p.Error
		}
		rows = append(rows, []string{strconv.Itoa(p.Partition), strconv.Itoa(p.Leader), joinInts(p.Replicas), joinInts(p.ISR),
			strconv.FormatInt(p.First, 10), strconv.FormatInt(p.Next, 10), strconv.FormatInt(p.Next-p.First, 10), errText})
	}
	if err := writeTable(w, []string{"PARTITION", "LEADER", "REPLICAS", "ISR", "FIRST", "NEXT", "RECORDS", "ERROR"}, rows); err != nil {
		return err
	}
	if len(d.Configs) > 0 {
		fmt.Fprintln(w)
		keys := make([]string, 0, len(d.Configs))
		for k := range d.Configs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		crows := make([][]string, 0, len(keys))
		for _, k := range keys {
			crows = append(crows, []string{k, d.Configs[k]})
		}
		if err := writeTable(w, []string{"CONFIG", "VALUE"}, crows); err != nil {
			return err
		}
	}
	if len(d.Subs) > 0 {
		fmt.Fprintln(w)
		if err := writeSubscriptions(w, d.Subs); err != nil {
			return err
		}
	}
	if d.Kind == "work" && d.Subs == nil {
		fmt.Fprintln(w)
		if len(d.Tiers) == 0 {
			fmt.Fprintln(w, "retry tiers: none found")
		}
		for i, t := range d.Tiers {
			delay := t.Delay
			if delay == "" {
				delay = "unknown (no record yet)"
			}
			fmt.Fprintf(w, "retry tier %d: %s, %s, bq-delay of the newest record: %s\n", i+1, t.Topic, nOf(t.Partitions, "partition", ""), delay)
		}
		for _, g := range d.TierGaps {
			fmt.Fprintf(w, "warning: %s exists after a missing tier; a re-injector never consumes it\n", g)
		}
		if d.DLQ != "" {
			fmt.Fprintf(w, "dead-letter topic: %s\n", d.DLQ)
		} else {
			fmt.Fprintln(w, "dead-letter topic: none")
		}
	}
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
