package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// ErrRedriveBusy is returned (wrapped) by Redrive, before it reads, writes
// or commits anything, when another run holds the cursor. Another run holds
// it when a member of the lock group "<cursor>.lock" exists, or
// joined at the same time. A run that was killed holds the cursor until its
// membership expires, the lock's session timeout (6 s) after its last
// heartbeat. It matches babelqueue.ErrRedriveBusy.
var ErrRedriveBusy = fmt.Errorf("kafka: %w", babelqueue.ErrRedriveBusy)

// RedriveLockSuffix ends the name of the lock group of a redrive cursor.
const RedriveLockSuffix = ".lock"

// redriveLockGroup returns the consumer group a run on cursor joins for
// its whole duration: "<cursor>.lock". The cursor group itself stays
// without members (its offsets are committed outside a generation, which
// the broker refuses for a group with members).
func redriveLockGroup(cursor string) string { return cursor + RedriveLockSuffix }

// Timings of the lock membership.
const (
	// redriveLockSession is the session timeout of the lock membership:
	// the broker's default group.min.session.timeout.ms, the shortest it
	// accepts. A killed run's membership expires after it.
	redriveLockSession = 6 * time.Second
	// redriveLockRebalance bounds how long the broker waits for the
	// members to rejoin when another client joins the lock group.
	redriveLockRebalance = 10 * time.Second
	// redriveLockHeartbeat is the interval of the heartbeats.
	redriveLockHeartbeat = time.Second
	// redriveLockLeaveTimeout bounds the LeaveGroup at the end of a run.
	redriveLockLeaveTimeout = 5 * time.Second
	// redriveLockProtocolType is the protocol type of the lock group.
	redriveLockProtocolType = "bq-redrive-lock"
)

// redriveLock is a run's membership of the lock group of its cursor. A
// goroutine heartbeats it (and rejoins when another client's join starts
// a rebalance) until release; a membership it loses cancels the run.
type redriveLock struct {
	client     *kafkago.Client
	group      string
	coord      net.Addr
	member     string
	generation int
	lostCancel context.CancelCauseFunc

	stop context.CancelFunc // ends the heartbeats
	done chan struct{}      // closed when the heartbeat goroutine returned

	mu   sync.Mutex
	lost error
}

// acquireRedriveLock joins the lock group of cursor and returns the held
// lock, or an error wrapping ErrRedriveBusy when another client is a
// member. cancel is called with the cause when the membership is lost
// while the run goes on.
func acquireRedriveLock(ctx context.Context, client *kafkago.Client, cursor string, cancel context.CancelCauseFunc) (*redriveLock, error) {
	group := redriveLockGroup(cursor)
	busy := func(detail string) error {
		return fmt.Errorf("%w: lock group %q %s (a run that was killed holds it until its session expires, %s after its last heartbeat)",
			ErrRedriveBusy, group, detail, redriveLockSession)
	}
	fc, err := client.FindCoordinator(ctx, &kafkago.FindCoordinatorRequest{Key: group, KeyType: kafkago.CoordinatorKeyTypeConsumer})
	if err == nil && fc.Error != nil {
		err = fc.Error
	}
	if err == nil && fc.Coordinator == nil {
		err = errors.New("no coordinator in the answer")
	}
	if err != nil {
		return nil, wrapf(err, "find the coordinator of lock group %q", group)
	}
	l := &redriveLock{
		client: client, group: group, lostCancel: cancel,
		coord: kafkago.TCP(net.JoinHostPort(fc.Coordinator.Host, strconv.Itoa(fc.Coordinator.Port))),
		done:  make(chan struct{}),
	}
	// A run in progress is seen without joining (and so without making it
	// rejoin).
	if state, members, err := l.describe(ctx); err != nil {
		return nil, err
	} else if len(members) > 0 {
		return nil, busy(fmt.Sprintf("has %d member(s) (state %s)", len(members), state))
	}
	if err := l.join(ctx); err != nil {
		l.leave()
		if errors.Is(err, kafkago.RebalanceInProgress) || errors.Is(err, kafkago.IllegalGeneration) || errors.Is(err, kafkago.UnknownMemberId) {
			return nil, busy("is rebalancing: another run joined at the same time")
		}
		return nil, err
	}
	// Two clients joining at the same time may both be members now: each
	// proceeds only alone in a stable group (both may fail, never both go).
	state, members, err := l.describe(ctx)
	if err != nil {
		l.leave()
		return nil, err
	}
	if state != "Stable" || len(members) != 1 || members[0] != l.member {
		l.leave()
		return nil, busy(fmt.Sprintf("has %d member(s) (state %s) besides or instead of this run", len(members), state))
	}
	hctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	go l.heartbeat(hctx)
	return l, nil
}

// describe returns the state and member ids of the lock group.
func (l *redriveLock) describe(ctx context.Context) (string, []string, error) {
	res, err := l.client.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{Addr: l.coord, GroupIDs: []string{l.group}})
	if err != nil {
		return "", nil, wrapf(err, "describe lock group %q", l.group)
	}
	for _, g := range res.Groups {
		if g.GroupID != l.group {
			continue
		}
		if g.Error != nil {
			return "", nil, wrapf(g.Error, "describe lock group %q", l.group)
		}
		ids := make([]string, 0, len(g.Members))
		for _, m := range g.Members {
			ids = append(ids, m.MemberID)
		}
		return g.GroupState, ids, nil
	}
	return "", nil, fmt.Errorf("kafka: describe lock group %q: missing from the answer", l.group)
}

// join joins (or rejoins) the lock group and completes the generation
// with a SyncGroup; the leader assigns nothing.
func (l *redriveLock) join(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		res, err := l.client.JoinGroup(ctx, &kafkago.JoinGroupRequest{
			Addr:             l.coord,
			GroupID:          l.group,
			SessionTimeout:   redriveLockSession,
			RebalanceTimeout: redriveLockRebalance,
			MemberID:         l.member,
			ProtocolType:     redriveLockProtocolType,
			Protocols:        []kafkago.GroupProtocol{{Name: "lock"}},
		})
		if err == nil && res.Error != nil {
			err = res.Error
		}
		if errors.Is(err, kafkago.MemberIDRequired) && attempt == 0 && res != nil {
			l.member = res.MemberID // the broker names the member, then it joins
			continue
		}
		if err != nil {
			return wrapf(err, "join lock group %q", l.group)
		}
		l.member, l.generation = res.MemberID, res.GenerationID
		var assign []kafkago.SyncGroupRequestAssignment
		if res.LeaderID == res.MemberID {
			for _, m := range res.Members {
				assign = append(assign, kafkago.SyncGroupRequestAssignment{MemberID: m.ID})
			}
		}
		sres, err := l.client.SyncGroup(ctx, &kafkago.SyncGroupRequest{
			Addr: l.coord, GroupID: l.group, GenerationID: l.generation, MemberID: l.member,
			ProtocolType: redriveLockProtocolType, ProtocolName: "lock", Assignments: assign,
		})
		if err == nil && sres.Error != nil {
			err = sres.Error
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// kafka-go cannot decode the empty assignment of an error
			// answer: the broker refused the sync because another
			// rebalance began.
			err = kafkago.RebalanceInProgress
		}
		if err != nil {
			return wrapf(err, "sync lock group %q", l.group)
		}
		return nil
	}
}

// heartbeat keeps the membership alive until release ends ctx. Every second it
// sends a Heartbeat and reads the group with DescribeGroups: kafka-go
// v0.4.51 decodes the Heartbeat answer's fields in the wrong order (the
// error code is read from the throttle time), so a rebalance is seen in
// the group's state instead. A rebalance (another client joining) is
// answered by rejoining, so the membership is never dropped in favour of
// the newcomer, whose check then finds two members. A membership that is
// gone, or that could not be confirmed for almost a session timeout,
// cancels the run.
func (l *redriveLock) heartbeat(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(redriveLockHeartbeat)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := l.beat(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			lastOK = time.Now()
			continue
		}
		if !errors.Is(err, errRedriveLockGone) && time.Since(lastOK) < redriveLockSession-redriveLockHeartbeat {
			continue
		}
		lost := fmt.Errorf("%w: lost the membership of lock group %q: %w", ErrRedriveBusy, l.group, err)
		l.mu.Lock()
		l.lost = lost
		l.mu.Unlock()
		if l.lostCancel != nil {
			l.lostCancel(lost)
		}
		return
	}
}

// errRedriveLockGone: the lock group no longer lists the run's member.
var errRedriveLockGone = errors.New("the member is no longer in the group")

// beat sends one heartbeat, then confirms the membership and rejoins when
// the group is rebalancing.
func (l *redriveLock) beat(ctx context.Context) error {
	hctx, hcancel := context.WithTimeout(ctx, 2*redriveLockHeartbeat)
	_, err := l.client.Heartbeat(hctx, &kafkago.HeartbeatRequest{
		Addr: l.coord, GroupID: l.group, GenerationID: int32(l.generation), MemberID: l.member,
	})
	hcancel()
	if err != nil {
		return wrapf(err, "heartbeat of lock group %q", l.group)
	}
	dctx, dcancel := context.WithTimeout(ctx, 2*redriveLockHeartbeat)
	state, members, err := l.describe(dctx)
	dcancel()
	if err != nil {
		return err
	}
	if !slices.Contains(members, l.member) {
		return errRedriveLockGone
	}
	if state != "PreparingRebalance" {
		return nil
	}
	err = l.join(ctx)
	if errors.Is(err, kafkago.UnknownMemberId) {
		return fmt.Errorf("%w: %w", errRedriveLockGone, err)
	}
	if errors.Is(err, kafkago.RebalanceInProgress) || errors.Is(err, kafkago.IllegalGeneration) {
		return nil // still a member: the next beat rejoins
	}
	return err
}

// lostErr is the error the lock was lost with, nil while held.
func (l *redriveLock) lostErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// stopHeartbeats stops the heartbeat goroutine and waits for it.
func (l *redriveLock) stopHeartbeats() {
	l.stop()
	<-l.done
}

// release stops the heartbeats and leaves the lock group, so the next run
// need not wait for the session to expire.
func (l *redriveLock) release() {
	l.stopHeartbeats()
	l.leave()
}

// leave sends a LeaveGroup for the member, if it has an id; its failure
// only delays the next run by the session timeout.
func (l *redriveLock) leave() {
	if l.member == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redriveLockLeaveTimeout)
	defer cancel()
	_, _ = l.client.LeaveGroup(ctx, &kafkago.LeaveGroupRequest{
		Addr: l.coord, GroupID: l.group, Members: []kafkago.LeaveGroupRequestMember{{ID: l.member}},
	})
}
