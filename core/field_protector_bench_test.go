package babelqueue

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/gdpr"
)

// sinkTransport accepts every write and keeps nothing, so that a publish
// benchmark measures the App, not a queue growing in memory.
type sinkTransport struct{}

func (sinkTransport) Features() driver.Features { return driver.Features{Headers: true, Keys: true} }
func (sinkTransport) Send(context.Context, *driver.Outgoing) (driver.Receipt, error) {
	return driver.Receipt{}, nil
}
func (sinkTransport) Receive(context.Context, string, time.Duration) (*driver.ReceivedMessage, error) {
	return nil, nil
}
func (sinkTransport) Ack(context.Context, *driver.ReceivedMessage) error      { return nil }
func (sinkTransport) HandBack(context.Context, *driver.ReceivedMessage) error { return nil }

// BenchmarkGDPRProtect publishes one payload with three fields marked
// sensitive (a string, a nested string, an object) through an App with
// WithFieldProtector and through one without, in the same run, and times
// the three AES-GCM encryptions alone, in alternating chunks. It prints
// "bench: gdpr-protect ours=<ns/msg> raw=<ns/msg> ratio=<ours/raw>
// overhead=<ns/msg> cipher=<ns/msg> overhead_minus_cipher=<ns/msg>"; the
// goal is overhead_minus_cipher <= 2000.
func BenchmarkGDPRProtect(b *testing.B) {
	ctx := context.Background()
	data := map[string]any{
		"order_id": 1042, "email": "alice@example.com", "sku": "A-1", "qty": 3,
		"profile": map[string]any{"full_name": "Alice Example", "tier": "gold"},
		"card":    map[string]any{"last4": "4242", "exp": "12/30"},
	}
	c, err := gdpr.NewAESGCM(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		b.Fatal(err)
	}
	p, err := gdpr.NewProtector(gdpr.PathsByURN{"urn:bench:order": gdpr.NewPaths("email", "profile.full_name", "card")}, c)
	if err != nil {
		b.Fatal(err)
	}
	plain, err := NewApp(sinkTransport{}, WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	protected, err := NewApp(sinkTransport{}, WithLogger(quietLogger()), WithFieldProtector(p))
	if err != nil {
		b.Fatal(err)
	}
	values := [][]byte{[]byte(`"alice@example.com"`), []byte(`"Alice Example"`), []byte(`{"exp":"12/30","last4":"4242"}`)}
	// The three are timed in alternating chunks, so that a change in the
	// load of a shared machine falls on all of them alike.
	const chunk = 256
	var rawD, oursD, cipherD time.Duration
	publish := func(a *App, n int) time.Duration {
		start := time.Now()
		for range n {
			if _, err := a.Publish(ctx, "urn:bench:order", data); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		rawD += publish(plain, n)
		oursD += publish(protected, n)
		start := time.Now()
		for range n {
			for _, v := range values {
				if _, err := c.Encrypt(v); err != nil {
					b.Fatal(err)
				}
			}
		}
		cipherD += time.Since(start)
	}
	perMsg := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	rawNs, oursNs, cipherNs := perMsg(rawD), perMsg(oursD), perMsg(cipherD)
	b.StopTimer()
	overhead := oursNs - rawNs
	b.ReportMetric(oursNs, "ours-ns/msg")
	b.ReportMetric(rawNs, "raw-ns/msg")
	b.ReportMetric(overhead-cipherNs, "overhead-minus-cipher-ns/msg")
	if b.N >= 1000 {
		fmt.Printf("bench: gdpr-protect ours=%.0f raw=%.0f ratio=%.2f overhead=%.0f cipher=%.0f overhead_minus_cipher=%.0f\n",
			oursNs, rawNs, oursNs/rawNs, overhead, cipherNs, overhead-cipherNs)
	}
}
