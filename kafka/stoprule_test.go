package kafka

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"
)

// unansweringBroker listens on loopback, accepts connections and never
// answers; it is closed at cleanup.
func unansweringBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestReinjectorRunStopsWithNil: the stop rule of package babelqueue. A
// context that ends, cancelled or past its deadline, while Run checks the
// connection, joins the group or carries records, makes Run return nil.
func TestReinjectorRunStopsWithNil(t *testing.T) {
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	emb := embBroker(t)[0]
	for name, addr := range map[string]string{
		"unanswering broker": unansweringBroker(t),
		"refused connection": closed,
		"running broker":     emb,
	} {
		for _, deadline := range []bool{false, true} {
			tr, err := New(WithBrokers(addr), WithGroupID("g"), WithRetryTiers(time.Second), quiet)
			if err != nil {
				t.Fatal(err)
			}
			r, err := tr.NewReinjector("orders")
			if err != nil {
				t.Fatal(err)
			}
			var ctx context.Context
			var cancel context.CancelFunc
			if deadline {
				ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			start := time.Now()
			err = r.Run(ctx)
			cancel()
			if err != nil {
				t.Errorf("%s, deadline %v: Run = %v, want nil", name, deadline, err)
			}
			t.Logf("%s, deadline %v: stopped after %v", name, deadline, time.Since(start).Round(time.Millisecond))
			// An unanswering broker holds kafka-go's group join for its 5s
			// I/O timeout (ConsumerGroupConfig.Timeout) before Close returns.
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("%s, deadline %v: Run took %v to stop", name, deadline, took)
			}
			_ = tr.Close()
		}
	}
	// Already ended before Run starts.
	tr, err := New(WithBrokers(closed), WithGroupID("g"), WithRetryTiers(time.Second), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	r, _ := tr.NewReinjector("orders")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("shutting down"))
	if err := r.Run(ctx); err != nil {
		t.Errorf("Run on an ended context = %v, want nil", err)
	}
}

// TestConnectionCheckEndsWithItsContext: a cancelled context (no
// deadline) ends the connection check of Run at once; it used to wait out
// the 5s check timeout on a broker that accepts and never answers.
func TestConnectionCheckEndsWithItsContext(t *testing.T) {
	tr, err := New(WithBrokers(unansweringBroker(t)), WithGroupID("g"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	err = tr.checkConnection(ctx)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("checkConnection returned %v after %v, want within about 200ms of the cancel", err, took)
	}
}
