package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// errBadURL is matched by every broker URL parsing error.
var errBadURL = errors.New("bad broker URL")

// Broker kinds.
const (
	kindKafka  = "kafka"
	kindPulsar = "pulsar"
)

// brokerURL is a parsed --broker value.
type brokerURL struct {
	// Kind is kindKafka or kindPulsar.
	Kind string
	// Hosts are the host:port pairs, in the order given.
	Hosts []string
	// TLS is set by the kafka+ssl and pulsar+ssl schemes.
	TLS bool
}

// parseBrokerURL parses kafka://host:port[,host:port...], a bare
// host:port[,host:port...] (Kafka, as BQ_KAFKA_BROKERS holds it),
// kafka+ssl://..., pulsar://host:port[,host:port] and pulsar+ssl://...
// Every host needs an explicit numeric port; paths, queries and user
// information are rejected (credentials go in flags or the environment).
func parseBrokerURL(s string) (brokerURL, error) {
	var u brokerURL
	if strings.TrimSpace(s) == "" {
		return u, fmt.Errorf("%w: none given (set --broker, BQ_KAFKA_BROKERS or BQ_PULSAR_URL, e.g. 127.0.0.1:9092)", errBadURL)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "kafka", s
	}
	switch strings.ToLower(scheme) {
	case "kafka":
		u.Kind = kindKafka
	case "kafka+ssl", "kafkas":
		u.Kind, u.TLS = kindKafka, true
	case "pulsar":
		u.Kind = kindPulsar
	case "pulsar+ssl":
		u.Kind, u.TLS = kindPulsar, true
	default:
		return u, fmt.Errorf("%w %q: unknown scheme %q (want kafka, kafka+ssl, pulsar or pulsar+ssl)", errBadURL, s, scheme)
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#@") {
		return u, fmt.Errorf("%w %q: only host:port pairs are allowed after the scheme (no path, query or credentials)", errBadURL, s)
	}
	for _, h := range strings.Split(rest, ",") {
		h = strings.TrimSpace(h)
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			return u, fmt.Errorf("%w %q: host %q: want host:port", errBadURL, s, h)
		}
		if host == "" {
			return u, fmt.Errorf("%w %q: host %q has no host name", errBadURL, s, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return u, fmt.Errorf("%w %q: port %q of %q: want 1-65535", errBadURL, s, port, h)
		}
		u.Hosts = append(u.Hosts, h)
	}
	return u, nil
}

// pulsarServiceURL is the service URL the Pulsar client expects.
func (u brokerURL) pulsarServiceURL() string {
	scheme := "pulsar"
	if u.TLS {
		scheme = "pulsar+ssl"
	}
	return scheme + "://" + strings.Join(u.Hosts, ",")
}
