package main

import (
	"bytes"
	"github.com/spf13/pflag"
	"strings"
	"testing"
)

func TestConnFlagsSecretsFromEnvironment(t *testing.T) {
	t.Setenv("BQ_PULSAR_TOKEN", "env-token")
	t.Setenv("BQ_SASL_PASSWORD", "env-password")
	parse := func(args ...string) *connFlags {
		t.Helper()
		var c connFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		c.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	k := brokerURL{Kind: kindKafka, Hosts: []string{"a:1"}}
	p := brokerURL{Kind: kindPulsar, Hosts: []string{"a:1"}}

	// An ambient token does not stop a Kafka command and is not used there.
	c := parse("--sasl-mechanism", "scram-sha-256", "--sasl-user", "u")
	if err := c.check(k); err != nil {
		t.Fatalf("Kafka with BQ_PULSAR_TOKEN set: %v", err)
	}
	if c.pulsarToken != "" || c.saslPassword != "env-password" {
		t.Errorf("Kafka: token %q, password %q; want none and the environment's", c.pulsarToken, c.saslPassword)
	}
	// On Pulsar the environment's token applies; a flag wins over it.
	c = parse()
	if err := c.check(p); err != nil || c.pulsarToken != "env-token" {
		t.Errorf("Pulsar: token %q, err %v; want the environment's", c.pulsarToken, err)
	}
	c = parse("--pulsar-token", "flag-token", "--sasl-password", "flag-password")
	if err := c.check(p); err != nil || c.pulsarToken != "flag-token" || c.saslPassword != "flag-password" {
		t.Errorf("flags: token %q, password %q, err %v; want the flags'", c.pulsarToken, c.saslPassword, err)
	}
	// An explicit token on Kafka is still a usage error.
	if err := parse("--pulsar-token", "flag-token").check(k); err == nil || !strings.Contains(err.Error(), "Pulsar only") {
		t.Errorf("--pulsar-token on Kafka: %v", err)
	}

	// --help never prints the secrets.
	var help bytes.Buffer
	var hc connFlags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	hc.register(fs)
	fs.SetOutput(&help)
	fs.PrintDefaults()
	if strings.Contains(help.String(), "env-token") || strings.Contains(help.String(), "env-password") {
		t.Errorf("help shows a secret from the environment:\n%s", help.String())
	}
}
