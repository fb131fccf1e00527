package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// probeTopic is created on the PLAINTEXT listener to prove the controller
// accepts writes; a second start finds it and treats "exists" as success.
const probeTopic = "__bq_probe"

func runKafka(args []string) error {
	var c common
	var brokers, saslBrokers, user, password string
	fs := flag.NewFlagSet("probe kafka", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&brokers, "brokers", "", "PLAINTEXT listener host:port")
	fs.StringVar(&saslBrokers, "sasl-brokers", "", "SASL_PLAINTEXT listener host:port (empty: skip)")
	fs.StringVar(&user, "user", "", "SCRAM user")
	fs.StringVar(&password, "password", "", "SCRAM password")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if brokers == "" {
		return errors.New("-brokers is required")
	}
	return poll(c, "kafka", func(ctx context.Context) error {
		if err := kafkaCreateProbeTopic(ctx, brokers); err != nil {
			return fmt.Errorf("PLAINTEXT %s: %w", brokers, err)
		}
		if saslBrokers == "" {
			return nil
		}
		for _, algo := range []scram.Algorithm{scram.SHA256, scram.SHA512} {
			if err := kafkaSASLMetadata(ctx, saslBrokers, algo, user, password); err != nil {
				return fmt.Errorf("SASL_PLAINTEXT %s (%s): %w", saslBrokers, algo.Name(), err)
			}
		}
		return nil
	})
}

func newTransport(mech *scram.Algorithm, user, password string) (*kafka.Transport, error) {
	t := &kafka.Transport{
		Dial:        (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		DialTimeout: 5 * time.Second,
		ClientID:    "bq-probe",
	}
	if mech != nil {
		m, err := scram.Mechanism(*mech, user, password)
		if err != nil {
			return nil, err
		}
		t.SASL = m
	}
	return t, nil
}

func kafkaCreateProbeTopic(ctx context.Context, addr string) error {
	t, err := newTransport(nil, "", "")
	if err != nil {
		return err
	}
	defer t.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addr), Transport: t, Timeout: 10 * time.Second}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: probeTopic, NumPartitions: 1, ReplicationFactor: 1}},
	})
	if err != nil {
		return err
	}
	if err := resp.Errors[probeTopic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return err
	}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{probeTopic}})
	if err != nil {
		return err
	}
	for _, topic := range md.Topics {
		if topic.Name != probeTopic {
			continue
		}
		if topic.Error != nil {
			return topic.Error
		}
		for _, p := range topic.Partitions {
			if p.Leader.ID < 0 || p.Error != nil {
				return fmt.Errorf("partition %d has no leader yet (%v)", p.ID, p.Error)
			}
		}
		return nil
	}
	return fmt.Errorf("topic %s missing from metadata", probeTopic)
}

func kafkaSASLMetadata(ctx context.Context, addr string, algo scram.Algorithm, user, password string) error {
	t, err := newTransport(&algo, user, password)
	if err != nil {
		return err
	}
	defer t.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addr), Transport: t, Timeout: 10 * time.Second}
	_, err = client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{probeTopic}})
	return err
}
