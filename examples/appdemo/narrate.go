package appdemo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// narrator prints what the App and the Reinjector report through their
// hooks, one line per settled delivery and per re-injected record.
type narrator struct {
	mu      sync.Mutex
	out     io.Writer
	start   time.Time
	backlog string // the last backlog line printed
}

var (
	_ babelqueue.SettleHook      = (*narrator)(nil)
	_ driver.ReinjectHook        = (*narrator)(nil)
	_ driver.ReinjectBacklogHook = (*narrator)(nil)
)

// say prints one line as it is.
func (n *narrator) say(format string, args ...any) {
	n.locked(func(out io.Writer) { fmt.Fprintf(out, format+"\n", args...) })
}

// locked runs print while no other line is printed.
func (n *narrator) locked(print func(io.Writer)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	print(n.out)
}

// printf prints one line stamped with the time since the demo started.
func (n *narrator) printf(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.out, "%5.1fs  "+format+"\n", append([]any{time.Since(n.start).Seconds()}, args...)...)
}

// OnSettle prints one line per settled delivery: which message, which
// delivery of it, and where the App sent it.
//
// The delivery is Settlement.Deliveries: 1 on the first, the handler's
// env.Attempts + 1.
func (n *narrator) OnSettle(_ context.Context, d *babelqueue.Delivery, s *babelqueue.Settlement) {
	id := "?"
	if d.Envelope != nil {
		if data, err := d.Envelope.DataMap(); err == nil {
			if v, ok := data["order_id"].(string); ok {
				id = v
			}
		}
	}
	line := fmt.Sprintf("%-6s delivery %d on %-14s %s", id, s.Deliveries, d.Queue, s.Outcome)
	switch s.Outcome {
	case babelqueue.OutcomeRetried:
		line += fmt.Sprintf(" (%s: %v) -> %s, due in %v", s.Reason, s.Err, s.Target, s.Delay)
	case babelqueue.OutcomeDeadLettered:
		line += fmt.Sprintf(" (%s: %v) -> %s", s.Reason, s.Err, s.Target)
	case babelqueue.OutcomeHandled:
	default:
		if s.Reason != "" {
			line += " (" + s.Reason + ")"
		}
	}
	n.printf("%s", line)
}

// OnReinject prints one line per retry record the Reinjector carried back.
func (n *narrator) OnReinject(_ context.Context, r *driver.Reinjection) {
	if r.Err != nil {
		n.printf("re-inject from %s failed: %v", r.Tier, r.Err)
		return
	}
	n.printf("reinjector: carried a record from %s back to %s (%v after its due time)", r.Tier, r.Queue, r.Lag.Round(time.Millisecond))
}

// OnReinjectBacklog prints the Reinjector's backlog sample of the tiers
// whenever it changed: the records waiting in each tier and how long the
// oldest has waited.
func (n *narrator) OnReinjectBacklog(_ context.Context, tiers []driver.ReinjectBacklog) {
	parts := make([]string, 0, len(tiers))
	for _, tb := range tiers {
		switch {
		case tb.Err != nil:
			parts = append(parts, fmt.Sprintf("%s: %v", tb.Tier, tb.Err))
		case tb.Backlog == 0:
			parts = append(parts, fmt.Sprintf("%s=0", tb.Tier))
		default:
			parts = append(parts, fmt.Sprintf("%s=%d (oldest waiting %v)", tb.Tier, tb.Backlog, tb.OldestAge.Round(100*time.Millisecond)))
		}
	}
	line := strings.Join(parts, ", ")
	n.mu.Lock()
	changed := line != n.backlog
	n.backlog = line
	n.mu.Unlock()
	if changed {
		n.printf("reinjector backlog: %s", line)
	}
}
