package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
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
	var url, admin, tlsURL, caFile, tokenFile string
	fs := flag.NewFlagSet("probe pulsar", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&url, "url", "", "binary protocol URL, pulsar://host:port")
	fs.StringVar(&admin, "admin", "", "admin (web service) URL, http://host:port")
	fs.StringVar(&tlsURL, "tls-url", "", "TLS binary protocol URL, pulsar+ssl://host:port (empty: skip)")
	fs.StringVar(&caFile, "ca", "", "PEM file of the CA that signed the broker certificate (needed with -tls-url)")
	fs.StringVar(&tokenFile, "token-file", "", "file holding a JWT the broker accepts; the TLS check authenticates with it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if url == "" || admin == "" {
		return errors.New("-url and -admin are required")
	}
	if tlsURL != "" && caFile == "" {
		return errors.New("-ca is required with -tls-url")
	}
	tlsOpts := pulsar.ClientOptions{URL: tlsURL, TLSTrustCertsFilePath: caFile, TLSValidateHostname: true}
	if tokenFile != "" {
		token, err := os.ReadFile(tokenFile)
		if err != nil {
			return fmt.Errorf("-token-file: %w", err)
		}
		tlsOpts.Authentication = pulsar.NewAuthenticationToken(strings.TrimSpace(string(token)))
	}
	return poll(c, "pulsar", func(ctx context.Context) error {
		if err := pulsarDefaultNamespace(ctx, admin); err != nil {
			return fmt.Errorf("admin %s: %w", admin, err)
		}
		if err := pulsarProduce(ctx, pulsar.ClientOptions{URL: url}); err != nil {
			return fmt.Errorf("broker %s: %w", url, err)
		}
		if tlsURL == "" {
			return nil
		}
		if err := pulsarProduce(ctx, tlsOpts); err != nil {
			return fmt.Errorf("broker %s (TLS, token %t): %w", tlsURL, tlsOpts.Authentication != nil, err)
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

// pulsarProduce sends one message with a client built from opts, which
// needs the broker, the metadata store and the bookie.
func pulsarProduce(ctx context.Context, opts pulsar.ClientOptions) error {
	opts.ConnectionTimeout = 5 * time.Second
	opts.OperationTimeout = 10 * time.Second
	opts.Logger = pulsarlog.NewLoggerWithSlog(quietLogger())
	client, err := pulsar.NewClient(opts)
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
