package kafka

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestWithBrokersAcceptsListsAndKafkaURLs: the forms of issue 36 name the
// same brokers as separate host:port arguments.
func TestWithBrokersAcceptsListsAndKafkaURLs(t *testing.T) {
	two := []string{"127.0.0.1:9092", "127.0.0.1:9093"}
	for _, c := range []struct {
		in   []string
		want []string
	}{
		{[]string{"127.0.0.1:9092,127.0.0.1:9093"}, two},
		{[]string{"127.0.0.1:9092", "127.0.0.1:9093"}, two},
		{[]string{"kafka://127.0.0.1:9092"}, two[:1]},
		{[]string{"kafka://127.0.0.1:9092,127.0.0.1:9093/"}, two},
		{[]string{"KAFKA://127.0.0.1:9092", " 127.0.0.1:9093 "}, two},
		{[]string{"127.0.0.1:9092 , 127.0.0.1:9093"}, two},
		{[]string{"[::1]:9092", "broker-1.example:9096"}, []string{"[::1]:9092", "broker-1.example:9096"}},
	} {
		tr, err := New(WithBrokers(c.in...))
		if err != nil {
			t.Errorf("New(WithBrokers(%q)) = %v", c.in, err)
			continue
		}
		if diff := cmp.Diff(c.want, tr.cfg.brokers); diff != "" {
			t.Errorf("WithBrokers(%q) brokers (-want +got):\n%s", c.in, diff)
		}
		_ = tr.Close()
	}
}

// TestWithBrokersRejectsBadAddresses: New reports every bad entry, each
// naming it and wrapping ErrInvalidOption, joined with the problems of
// other options, and no ErrNoBrokers on top.
func TestWithBrokersRejectsBadAddresses(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"", "blank broker address"},
		{"127.0.0.1", `"127.0.0.1" is not host:port`},
		{"127.0.0.1:", `port "" of "127.0.0.1:" is not a number`},
		{"127.0.0.1:99999", `port "99999"`},
		{":9092", `":9092" has no host`},
		{"127.0.0.1:9092,", `broker list "127.0.0.1:9092," has an empty entry`},
		{"kafka+ssl://127.0.0.1:9092", `scheme "kafka+ssl" is not supported`},
		{"pulsar://127.0.0.1:6650", `scheme "pulsar" is not supported`},
		{"kafka://user@127.0.0.1:9092", "only host:port pairs may follow kafka://"},
		{"kafka://127.0.0.1:9092/orders", "only host:port pairs may follow kafka://"},
		{"::1:9092", `"::1:9092" is not host:port`},
		{"my host:9092", `host "my host"`},
	} {
		_, err := New(WithBrokers(c.in), WithLinger(0))
		if !errors.Is(err, babelqueue.ErrInvalidOption) {
			t.Errorf("WithBrokers(%q): New = %v, want ErrInvalidOption", c.in, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "linger") {
			t.Errorf("WithBrokers(%q): New = %q, want %q and the linger problem", c.in, msg, c.want)
		}
		if errors.Is(err, ErrNoBrokers) {
			t.Errorf("WithBrokers(%q): New also reports ErrNoBrokers: %q", c.in, msg)
		}
		if n := strings.Count(msg, "babelqueue: invalid option"); n != 2 {
			t.Errorf("WithBrokers(%q): %d problems in %q, want 2", c.in, n, msg)
		}
	}
	_, err := New(WithBrokers("a:1,b", "c", "d:2"))
	if n := strings.Count(fmtErr(err), "\n") + 1; err == nil || n != 2 {
		t.Errorf("two bad entries: New = %v, want both reported", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPublishThroughCommaListDoesNotPanic: the list the bq scripts print
// (BQ_KAFKA_BROKERS) used to reach kafka-go as one address, and the first
// Publish panicked there ("index out of range [1] with length 1").
func TestPublishThroughCommaListDoesNotPanic(t *testing.T) {
	addr := embBroker(t)[0]
	tr := embTransport(t, []string{addr + "," + addr})
	ctx := embCtx(t, 10*time.Second)
	if err := tr.Publish(ctx, "issue36-list", `{"x":1}`); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	tr2 := embTransport(t, []string{"kafka://" + addr})
	if err := tr2.Publish(ctx, "issue36-list", `{"x":2}`); err != nil {
		t.Fatalf("Publish through kafka://: %v", err)
	}
}

// FuzzParseBrokers: parseBrokers never panics; every address it returns is
// one host:port that kafka-go can dial (no list separator left), and
// parsing the addresses again, joined with commas, returns them unchanged.
func FuzzParseBrokers(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9092,127.0.0.1:9093", "kafka://127.0.0.1:9092", "", ",", "kafka://", "[::1]:1", "a:1, b:2/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addrs, problems := parseBrokers([]string{s})
		if len(problems) == 0 && len(addrs) == 0 {
			t.Fatalf("%q: no address and no problem", s)
		}
		for _, a := range addrs {
			host, port, err := net.SplitHostPort(a)
			if err != nil || host == "" || strings.ContainsAny(a, ", \t") {
				t.Fatalf("%q: address %q is not one host:port (%v)", s, a, err)
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				t.Fatalf("%q: address %q has port %q", s, a, port)
			}
		}
		if len(addrs) > 0 {
			again, p := parseBrokers([]string{strings.Join(addrs, ",")})
			if len(p) != 0 || !cmp.Equal(again, addrs) {
				t.Fatalf("%q: reparse of %q = %q, %q", s, addrs, again, p)
			}
		}
	})
}
