package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// clusterProbeTopic is created with one replica per node to prove the
// controller quorum accepts writes and every node replicates.
const clusterProbeTopic = "__bq_cluster_probe"

// runKafkaCluster waits until every listener of -brokers answers a
// metadata request that lists every node of -nodes as a live broker and,
// with -replicas N, until the probe topic exists with N in-sync replicas.
//
//	probe kafka-cluster -brokers 127.0.0.1:29092,... -nodes 1,2,3 [-replicas 3] [-pids p1,p2,p3] [-timeout 3m]
func runKafkaCluster(args []string) error {
	var c common
	var brokers, nodes, pids string
	var replicas int
	fs := flag.NewFlagSet("probe kafka-cluster", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&brokers, "brokers", "", "comma-separated PLAINTEXT listeners to ask (host:port)")
	fs.StringVar(&nodes, "nodes", "", "comma-separated node ids that must be live brokers")
	fs.IntVar(&replicas, "replicas", 0, "create the probe topic with this many replicas and wait for a full ISR (0: skip)")
	fs.StringVar(&pids, "pids", "", "comma-separated pids: give up when any is gone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	addrs := splitList(brokers)
	if len(addrs) == 0 {
		return errors.New("-brokers is required")
	}
	want, err := intList(nodes)
	if err != nil {
		return fmt.Errorf("-nodes: %w", err)
	}
	watched, err := intList(pids)
	if err != nil {
		return fmt.Errorf("-pids: %w", err)
	}
	check := func(ctx context.Context) error {
		for _, pid := range watched {
			if !alive(pid) {
				return fmt.Errorf("%w (pid %d)", errProcessGone, pid)
			}
		}
		for _, addr := range addrs {
			if err := clusterMetadata(ctx, addr, want); err != nil {
				return fmt.Errorf("%s: %w", addr, err)
			}
		}
		if replicas > 0 {
			return clusterProbe(ctx, addrs, replicas)
		}
		return nil
	}
	return pollGone(c, "kafka cluster", check)
}

// pollGone is poll that stops at once when the check reports a watched
// process gone.
func pollGone(c common, name string, check func(ctx context.Context) error) error {
	var gone error
	err := poll(c, name, func(ctx context.Context) error {
		err := check(ctx)
		if errors.Is(err, errProcessGone) {
			gone = err
			return nil
		}
		return err
	})
	if gone != nil {
		return fmt.Errorf("%s: %w", name, gone)
	}
	return err
}

// runKafkaLeader prints the node id leading -topic/-partition, asking the
// first listener of -brokers that answers.
//
//	probe kafka-leader -brokers 127.0.0.1:29092,... -topic T -partition P
func runKafkaLeader(args []string) error {
	var brokers, topic string
	var partition int
	var timeout time.Duration
	fs := flag.NewFlagSet("probe kafka-leader", flag.ContinueOnError)
	fs.StringVar(&brokers, "brokers", "", "comma-separated PLAINTEXT listeners (host:port)")
	fs.StringVar(&topic, "topic", "", "topic")
	fs.IntVar(&partition, "partition", 0, "partition")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if brokers == "" || topic == "" {
		return errors.New("-brokers and -topic are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for _, addr := range splitList(brokers) {
		md, err := metadataOf(ctx, addr, []string{topic})
		if err != nil {
			last = fmt.Errorf("%s: %w", addr, err)
			continue
		}
		for _, t := range md.Topics {
			if t.Name != topic {
				continue
			}
			if t.Error != nil {
				return fmt.Errorf("topic %s: %w", topic, t.Error)
			}
			for _, p := range t.Partitions {
				if p.ID == partition {
					if p.Leader.ID < 0 {
						return fmt.Errorf("%s/%d has no leader (%v)", topic, partition, p.Error)
					}
					fmt.Println(p.Leader.ID)
					return nil
				}
			}
			return fmt.Errorf("topic %s has no partition %d", topic, partition)
		}
		return fmt.Errorf("topic %s missing from the metadata of %s", topic, addr)
	}
	return last
}

func metadataOf(ctx context.Context, addr string, topics []string) (*kafka.MetadataResponse, error) {
	t, err := newTransport(nil, nil, "", "")
	if err != nil {
		return nil, err
	}
	// A node that was just killed must not hold the caller for long.
	t.Dial = (&net.Dialer{Timeout: 2 * time.Second}).DialContext
	defer t.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addr), Transport: t, Timeout: 5 * time.Second}
	return client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
}

// clusterMetadata asks the listener at addr for the live brokers and checks
// that each of want is among them.
func clusterMetadata(ctx context.Context, addr string, want []int) error {
	md, err := metadataOf(ctx, addr, []string{})
	if err != nil {
		return err
	}
	var live []int
	for _, b := range md.Brokers {
		live = append(live, b.ID)
	}
	for _, id := range want {
		if !slices.Contains(live, id) {
			return fmt.Errorf("node %d is not a live broker yet (live: %v)", id, live)
		}
	}
	return nil
}

// clusterProbe creates the probe topic with replicas replicas and checks
// that its partition has a leader and a full ISR.
func clusterProbe(ctx context.Context, addrs []string, replicas int) error {
	t, err := newTransport(nil, nil, "", "")
	if err != nil {
		return err
	}
	defer t.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addrs...), Transport: t, Timeout: 10 * time.Second}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: clusterProbeTopic, NumPartitions: 1, ReplicationFactor: replicas}},
	})
	if err != nil {
		return err
	}
	if err := resp.Errors[clusterProbeTopic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return err
	}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{clusterProbeTopic}})
	if err != nil {
		return err
	}
	for _, topic := range md.Topics {
		if topic.Name != clusterProbeTopic {
			continue
		}
		if topic.Error != nil {
			return topic.Error
		}
		for _, p := range topic.Partitions {
			if p.Leader.ID < 0 || p.Error != nil {
				return fmt.Errorf("probe partition %d has no leader yet (%v)", p.ID, p.Error)
			}
			if len(p.Isr) < replicas {
				return fmt.Errorf("probe partition %d has %d in-sync replicas, want %d", p.ID, len(p.Isr), replicas)
			}
		}
		return nil
	}
	return fmt.Errorf("topic %s missing from metadata", clusterProbeTopic)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
