package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"
)

// pulsarProbeTopic receives one small message per probe.
const pulsarProbeTopic = "persistent://public/default/__bq_probe"

func runPulsar(args []string) error {
	var c common
	var url, admin string
	fs := flag.NewFlagSet("probe pulsar", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&url, "url", "", "binary protocol URL, pulsar://host:port")
	fs.StringVar(&admin, "admin", "", "admin (web service) URL, http://host:port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if url == "" || admin == "" {
		return errors.New("-url and -admin are required")
	}
	return poll(c, "pulsar", func(ctx context.Context) error {
		if err := pulsarDefaultNamespace(ctx, admin); err != nil {
			return fmt.Errorf("admin %s: %w", admin, err)
		}
		if err := pulsarProduce(ctx, url); err != nil {
			return fmt.Errorf("broker %s: %w", url, err)
		}
		return nil
	})
}

// pulsarDefaultNamespace succeeds when the admin API lists public/default,
// which standalone creates shortly after the broker starts.
func pulsarDefaultNamespace(ctx context.Context, admin string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(admin, "/")+"/admin/v2/namespaces/public", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET namespaces of public: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var namespaces []string
	if err := json.Unmarshal(body, &namespaces); err != nil {
		return fmt.Errorf("GET namespaces of public: %w", err)
	}
	if !slices.Contains(namespaces, "public/default") {
		return fmt.Errorf("namespace public/default not created yet (have %v)", namespaces)
	}
	return nil
}

// pulsarProduce sends one message, which needs the broker, the metadata
// store and the bookie.
func pulsarProduce(ctx context.Context, url string) error {
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               url,
		ConnectionTimeout: 5 * time.Second,
		OperationTimeout:  10 * time.Second,
		Logger:            pulsarlog.NewLoggerWithSlog(quietLogger()),
	})
	if err != nil {
		return err
	}
	defer client.Close()
	producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: pulsarProbeTopic, SendTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer producer.Close()
	_, err = producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("probe")})
	return err
}
