package kafka

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// TestWritesKeepAnEmptyKeyApartFromNone checks that every write this
// transport derives from a reserved record carries that record's key as it
// is: an empty key stays empty and a null key stays null. (Reading keeps
// them apart too: recordkeys_test.go and
// TestIntegrationEmptyAndNullKeysSurviveEveryHop.)
func TestWritesKeepAnEmptyKeyApartFromNone(t *testing.T) {
	cases := []struct {
		name  string
		tiers bool
		out   driver.Outgoing
		topic string
	}{
		{"retry without tiers", false, driver.Outgoing{Intent: driver.IntentRetry, Queue: "orders", Attempt: 1}, "orders"},
		{"retry with tiers", true, driver.Outgoing{Intent: driver.IntentRetry, Queue: "orders", Attempt: 1}, "orders.retry.2"},
		{"release", false, driver.Outgoing{Intent: driver.IntentRelease, Queue: "orders"}, "orders"},
		{"dead letter", false, driver.Outgoing{Intent: driver.IntentDeadLetter, Queue: "orders.dlq"}, "orders.dlq"},
		{"redrive", false, driver.Outgoing{Intent: driver.IntentRedrive, Queue: "orders"}, "orders"},
		{"forward", false, driver.Outgoing{Intent: driver.IntentForward, Queue: "orders.dlq"}, "orders.dlq"},
		{"restore", false, driver.Outgoing{Intent: driver.IntentRestore, Queue: "orders"}, "orders"},
	}
	for _, c := range cases {
		for name, key := range map[string][]byte{"empty": {}, "null": nil} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				var opts []Option
				if c.tiers {
					opts = append(opts, WithRetryTiers(5*time.Second, 30*time.Second))
				}
				rg := newRig(t, opts...)
				rg.log.append("orders", 0, kafkago.Message{Key: key, Value: []byte(envelope(t, 1)), Headers: contractHeaders("1")})
				out := c.out
				out.From = rg.pop("orders")
				out.Body = out.From.Body
				if _, err := rg.tr.Send(context.Background(), &out); err != nil {
					t.Fatal(err)
				}
				got := rg.log.records(c.topic)
				if k := got[len(got)-1].Key; (k == nil) != (key == nil) || len(k) != 0 {
					t.Fatalf("written key %#v, want %#v", k, key)
				}
			})
		}
	}
}

// TestReinjectAndRedriveKeepAnEmptyKey checks the re-injected copy of a
// retry record and the redriven copy of a dead letter.
func TestReinjectAndRedriveKeepAnEmptyKey(t *testing.T) {
	for name, key := range map[string][]byte{"empty": {}, "null": nil} {
		r := &Reinjector{clock: driver.SystemClock{}, workOf: map[string]string{"orders.retry.1": "orders"}}
		m := r.reinjected(kafkago.Message{Topic: "orders.retry.1", Key: key, Value: []byte("v")})
		if (m.Key == nil) != (key == nil) || len(m.Key) != 0 {
			t.Errorf("%s: re-injected key %#v, want %#v", name, m.Key, key)
		}
		run := &redriveRun{t: &Transport{cfg: defaultConfig()}, dlq: "orders.dlq"}
		if k := run.keptCopy(redriveRecord{Key: key}).Key; (k == nil) != (key == nil) || len(k) != 0 {
			t.Errorf("%s: redriven key %#v, want %#v", name, k, key)
		}
	}
}
