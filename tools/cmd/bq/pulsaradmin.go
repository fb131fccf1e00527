package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// pulsarAdmin is a small client of the Pulsar admin REST API (v2): what
// topics list and describe and lag need, each request bounded by the
// request timeout.
type pulsarAdmin struct {
	base    string
	token   string
	timeout time.Duration
	http    *http.Client
}

// pulsarAdmin returns the admin client of the flags: --admin-url, else
// BQ_PULSAR_ADMIN_URL, else http(s)://<first broker host>:8080 (8443 with TLS).
func (c *connFlags) pulsarAdmin(u brokerURL, flagURL string) (*pulsarAdmin, error) {
	if u.Kind != kindPulsar {
		return nil, usagef("the Pulsar admin API needs a Pulsar broker")
	}
	base := flagURL
	if base == "" {
		base = os.Getenv(envPulsarAdmin)
	}
	if base == "" {
		host, _, _ := net.SplitHostPort(u.Hosts[0])
		base = "http://" + net.JoinHostPort(host, "8080")
		if c.useTLS(u) {
			base = "https://" + net.JoinHostPort(host, "8443")
		}
	}
	pu, err := url.Parse(base)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, usagef("Pulsar admin URL %q: want http(s)://host:port", base)
	}
	tcfg, err := c.tlsConfig(u)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: tcfg, DialContext: (&net.Dialer{Timeout: c.dialTimeout}).DialContext,
		TLSHandshakeTimeout: c.dialTimeout, ResponseHeaderTimeout: c.timeout}
	return &pulsarAdmin{base: strings.TrimRight(base, "/"), token: c.pulsarToken, timeout: c.timeout,
		http: &http.Client{Transport: tr, Timeout: c.timeout}}, nil
}

// errNotFound is matched by a 404 of the admin API.
var errNotFound = errors.New("not found")

// get decodes the JSON answer of path into v.
func (a *pulsarAdmin) get(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	res, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: Pulsar admin API %s: %w", errUnreachable, a.base, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("pulsar admin API %s: %w", path, err)
	}
	switch {
	case res.StatusCode == http.StatusNotFound:
		return fmt.Errorf("pulsar admin API %s: %w", path, errNotFound)
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: Pulsar admin API %s: %s (--pulsar-token)", errRejected, path, res.Status)
	case res.StatusCode/100 != 2:
		return fmt.Errorf("pulsar admin API %s: %s: %s", path, res.Status, abbreviate(strings.TrimSpace(string(body)), 200))
	}
	return json.Unmarshal(body, v)
}

// pulsarTopicPath splits a topic name into the admin path of its
// persistent topic: "orders" is public/default/orders.
func pulsarTopicPath(topic string) string {
	name := strings.TrimPrefix(topic, "persistent://")
	parts := strings.Split(name, "/")
	if len(parts) < 3 {
		parts = append([]string{"public", "default"}, parts[len(parts)-1])
	}
	for i := range parts {
		parts[i] = url.PathEscape(parts[i])
	}
	return "/admin/v2/persistent/" + strings.Join(parts, "/")
}

// listTopics lists the persistent topics of a namespace, partitions of a
// partitioned topic folded into it.
func (a *pulsarAdmin) listTopics(ctx context.Context, namespace string) ([]topicRow, error) {
	var names []string
	if err := a.get(ctx, "/admin/v2/persistent/"+namespace, &names); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, n := range names {
		n = strings.TrimPrefix(n, "persistent://"+namespace+"/")
		if i := strings.LastIndex(n, "-partition-"); i > 0 {
			if _, err := strconv.Atoi(n[i+len("-partition-"):]); err == nil {
				counts[n[:i]]++
				continue
			}
		}
		if _, ok := counts[n]; !ok {
			counts[n] = 0
		}
	}
	rows := make([]topicRow, 0, len(counts))
	for n, c := range counts {
		rows = append(rows, topicRow{Topic: n, Partitions: c, Kind: topicKind(n)})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Topic < rows[j].Topic })
	return rows, nil
}

// subscription is one subscription of a Pulsar topic with its backlog.
type subscription struct {
	Name      string `json:"subscription"`
	Type      string `json:"type"`
	Backlog   int64  `json:"backlog"`
	Consumers int    `json:"consumers"`
}

// topicStats is the part of the topic stats bq reads.
type topicStats struct {
	MsgInCounter  int64 `json:"msgInCounter"`
	Subscriptions map[string]struct {
		MsgBacklog int64             `json:"msgBacklog"`
		Type       string            `json:"type"`
		Consumers  []json.RawMessage `json:"consumers"`
	} `json:"subscriptions"`
}

// stats reads the stats of a topic, a partitioned one summed over its
// partitions; parts is its partition count (0: not partitioned).
func (a *pulsarAdmin) stats(ctx context.Context, topic string) (*topicStats, int, error) {
	var meta struct {
		Partitions int `json:"partitions"`
	}
	if err := a.get(ctx, pulsarTopicPath(topic)+"/partitions", &meta); err != nil {
		return nil, 0, err
	}
	var st topicStats
	path := pulsarTopicPath(topic) + "/stats"
	if meta.Partitions > 0 {
		path = pulsarTopicPath(topic) + "/partitioned-stats"
	}
	if err := a.get(ctx, path, &st); err != nil {
		return nil, 0, err
	}
	return &st, meta.Partitions, nil
}

// subscriptions lists the subscriptions of a topic, sorted by name.
func (st *topicStats) subscriptions() []subscription {
	subs := make([]subscription, 0, len(st.Subscriptions))
	for name, s := range st.Subscriptions {
		subs = append(subs, subscription{Name: name, Type: s.Type, Backlog: s.MsgBacklog, Consumers: len(s.Consumers)})
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	return subs
}

// describe gathers a Pulsar topic's description.
func (a *pulsarAdmin) describe(ctx context.Context, topic string) (*topicDescription, error) {
	st, parts, err := a.stats(ctx, topic)
	if err != nil {
		return nil, err
	}
	d := &topicDescription{Topic: topic, Kind: topicKind(topic), Configs: map[string]string{}, Tiers: []tierInfo{}, Partitions: []partitionInfo{}}
	for i := 0; i < parts; i++ {
		d.Partitions = append(d.Partitions, partitionInfo{Partition: i, Replicas: []int{}, ISR: []int{}})
	}
	d.Subs = st.subscriptions()
	d.Configs["messages_in"] = strconv.FormatInt(st.MsgInCounter, 10)
	return d, nil
}

// writeSubscriptions prints subscriptions with their backlog.
func writeSubscriptions(w io.Writer, subs []subscription) error {
	rows := make([][]string, 0, len(subs))
	for _, s := range subs {
		rows = append(rows, []string{s.Name, s.Type, strconv.FormatInt(s.Backlog, 10), strconv.Itoa(s.Consumers)})
	}
	return writeTable(w, []string{"SUBSCRIPTION", "TYPE", "BACKLOG", "CONSUMERS"}, rows)
}
