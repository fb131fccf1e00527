package main

import (
	"context"
	"fmt"
	kafkago "github.com/segmentio/kafka-go"
	"sort"
	"strconv"
	"strings"
	"time"

	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
)

// Retry tiers are declared once, by the producers (kafka.WithRetryTiers);
// the library has none unless configured. bq does not assume any: it finds
// the tier topics <topic>.retry.<n> that exist, and takes their durations
// from --tiers or from the bq-delay header of the newest record of each.

// parseTiers reads a comma-separated list of durations ("5s,30s,5m,30m");
// "none" means no retry tiers and "recommended" the library's
// DefaultRetryTiers.
func parseTiers(s string) ([]time.Duration, error) {
	switch strings.TrimSpace(s) {
	case "none":
		return nil, nil
	case "recommended":
		return append([]time.Duration(nil), bqkafka.DefaultRetryTiers...), nil
	}
	var tiers []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--tiers %q: %q is not a positive duration", s, f)
		}
		if n := len(tiers); n > 0 && d <= tiers[n-1] {
			return nil, fmt.Errorf("--tiers %q: tiers must ascend", s)
		}
		tiers = append(tiers, d)
	}
	return tiers, nil
}

// tiersString formats tiers as parseTiers reads them.
func tiersString(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// listTopics returns every topic name of the cluster, sorted.
func (k *kafkaConn) listTopics(ctx context.Context) ([]string, map[string]int, error) {
	md, err := k.client.Metadata(ctx, &kafkago.MetadataRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("list topics: %w", err)
	}
	names := make([]string, 0, len(md.Topics))
	parts := map[string]int{}
	for _, t := range md.Topics {
		if t.Error != nil || t.Internal {
			continue
		}
		names = append(names, t.Name)
		parts[t.Name] = len(t.Partitions)
	}
	sort.Strings(names)
	return names, parts, nil
}

// tierTopicsOf returns the retry tier topics of work that exist in
// names, in tier order: <work>.retry.1, .2, ... up to the first gap.
// gaps lists tier topics found beyond a gap (never consumed).
func tierTopicsOf(work string, names []string) (tiers, gaps []string) {
	have := map[int]string{}
	prefix := work + ".retry."
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok {
			continue
		}
		if i, err := strconv.Atoi(rest); err == nil && i > 0 && strconv.Itoa(i) == rest {
			have[i] = n
		}
	}
	i := 1
	for ; have[i] != ""; i++ {
		tiers = append(tiers, have[i])
	}
	for j, n := range have {
		if j > i {
			gaps = append(gaps, n)
		}
	}
	sort.Strings(gaps)
	return tiers, gaps
}

// newestDelay reads the bq-delay header (milliseconds) of the newest
// record of topic, over its partitions; ok is false when the topic is
// empty or its newest records carry none.
func (k *kafkaConn) newestDelay(ctx context.Context, topic string) (time.Duration, bool, error) {
	parts, err := k.partitions(ctx, topic)
	if err != nil {
		return 0, false, err
	}
	first, next, err := k.bounds(ctx, topic, parts)
	if err != nil {
		return 0, false, err
	}
	var newest time.Time
	var delay time.Duration
	found := false
	for _, p := range parts {
		if next[p] <= first[p] {
			continue
		}
		err := k.readRange(ctx, topic, p, next[p]-1, next[p], func(m kafkaMessage) error {
			r := kafkaRecord(m)
			v, ok := r.header("bq-delay")
			if !ok {
				return nil
			}
			ms, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || ms < 0 {
				return nil
			}
			if !found || m.Time.After(newest) {
				newest, delay, found = m.Time, time.Duration(ms)*time.Millisecond, true
			}
			return nil
		})
		if err != nil {
			return 0, false, err
		}
	}
	return delay, found, nil
}
