package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// probeTopic is created on the PLAINTEXT listener to prove the controller
// accepts writes; a second start finds it and treats "exists" as success.
const probeTopic = "__bq_probe"

func runKafka(args []string) error {
	var c common
	var brokers, saslBrokers, user, password, tlsBrokers, saslTLSBrokers, caFile string
	fs := flag.NewFlagSet("probe kafka", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&brokers, "brokers", "", "PLAINTEXT listener host:port")
	fs.StringVar(&saslBrokers, "sasl-brokers", "", "SASL_PLAINTEXT listener host:port (empty: skip)")
	fs.StringVar(&user, "user", "", "SCRAM user")
	fs.StringVar(&password, "password", "", "SCRAM password")
	fs.StringVar(&tlsBrokers, "tls-brokers", "", "SSL listener host:port (empty: skip)")
	fs.StringVar(&saslTLSBrokers, "sasl-tls-brokers", "", "SASL_SSL listener host:port (empty: skip)")
	fs.StringVar(&caFile, "ca", "", "PEM file of the CA that signed the broker certificate (needed with -tls-brokers or -sasl-tls-brokers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if brokers == "" {
		return errors.New("-brokers is required")
	}
	var tlsCfg *tls.Config
	if tlsBrokers != "" || saslTLSBrokers != "" {
		var err error
		if tlsCfg, err = trustCA(caFile); err != nil {
			return err
		}
	}
	return poll(c, "kafka", func(ctx context.Context) error {
		if err := kafkaCreateProbeTopic(ctx, brokers); err != nil {
			return fmt.Errorf("PLAINTEXT %s: %w", brokers, err)
		}
		if saslBrokers != "" {
			for _, algo := range []scram.Algorithm{scram.SHA256, scram.SHA512} {
				if err := kafkaMetadata(ctx, saslBrokers, nil, &algo, user, password); err != nil {
					return fmt.Errorf("SASL_PLAINTEXT %s (%s): %w", saslBrokers, algo.Name(), err)
				}
			}
		}
		if tlsBrokers != "" {
			if err := kafkaMetadata(ctx, tlsBrokers, tlsCfg, nil, "", ""); err != nil {
				return fmt.Errorf("SSL %s: %w", tlsBrokers, err)
			}
		}
		if saslTLSBrokers != "" {
			algo := scram.SHA512
			if err := kafkaMetadata(ctx, saslTLSBrokers, tlsCfg, &algo, user, password); err != nil {
				return fmt.Errorf("SASL_SSL %s (%s): %w", saslTLSBrokers, algo.Name(), err)
			}
		}
		return nil
	})
}

// trustCA returns a TLS client configuration trusting only the CA
// certificates in file.
func trustCA(file string) (*tls.Config, error) {
	if file == "" {
		return nil, errors.New("-ca is required with a TLS listener")
	}
	pemData, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("-ca %s: no PEM certificate in it", file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func newTransport(tlsCfg *tls.Config, mech *scram.Algorithm, user, password string) (*kafka.Transport, error) {
	t := &kafka.Transport{
		Dial:        (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		DialTimeout: 5 * time.Second,
		ClientID:    "bq-probe",
		TLS:         tlsCfg,
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
	t, err := newTransport(nil, nil, "", "")
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

// kafkaMetadata makes a metadata request through the listener at addr,
// with TLS when tlsCfg is set and SCRAM when algo is.
func kafkaMetadata(ctx context.Context, addr string, tlsCfg *tls.Config, algo *scram.Algorithm, user, password string) error {
	t, err := newTransport(tlsCfg, algo, user, password)
	if err != nil {
		return err
	}
	defer t.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addr), Transport: t, Timeout: 10 * time.Second}
	_, err = client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{probeTopic}})
	return err
}
