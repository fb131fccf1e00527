// Package redisstore is an idempotency.Store on Redis
// (github.com/redis/go-redis/v9). One key per message id, prefix + id: a
// claim holds "c:" + token with a PX expiry of the lease, a done record
// holds "d" with a PX expiry of the TTL (none when the TTL is 0). Claim is
// SET NX PX (atomic on the server); Complete and Release are Lua scripts
// that check the token, so an expired lease taken by another delivery is
// never overwritten. Expiry is Redis's own: no cleanup is needed.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/idempotency"
)

// DefaultPrefix is the key prefix unless WithPrefix says otherwise.
const DefaultPrefix = "bq:idem:"

// Store is an idempotency.Store on a Redis client.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

// config holds the options of a Store. Every option and its default:
//
//	option        default
//	WithPrefix    DefaultPrefix ("bq:idem:")
//
// An invalid value is recorded by its option; New reports every problem
// together (errors.Join), each matching babelqueue.ErrInvalidOption.
type config struct {
	prefix string
	errs   option.Errors
}

// Option configures a Store.
type Option func(*config)

// WithPrefix sets the key prefix, which must not be empty.
func WithPrefix(p string) Option {
	return func(c *config) {
		if p == "" {
			c.errs.Fail("empty key prefix")
			return
		}
		c.prefix = p
	}
}

// New returns a Store on rdb, or every problem of a nil rdb and the
// options together.
func New(rdb redis.UniversalClient, opts ...Option) (*Store, error) {
	c := config{prefix: DefaultPrefix, errs: option.Prefixed("redisstore")}
	if rdb == nil {
		c.errs.Fail("nil redis client")
	}
	if err := option.Apply(&c, &c.errs, opts); err != nil {
		return nil, err
	}
	return &Store{rdb: rdb, prefix: c.prefix}, nil
}

var (
	completeScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then redis.call('SET', KEYS[1], 'd', 'PX', ARGV[2]) else redis.call('SET', KEYS[1], 'd') end
return 1`)
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)
)

func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, id, token string, lease time.Duration) (idempotency.State, error) {
	key := s.prefix + id
	for range 3 {
		ok, err := s.rdb.SetNX(ctx, key, "c:"+token, time.Duration(ms(lease))*time.Millisecond).Result()
		if err != nil {
			return 0, fmt.Errorf("redisstore: claim: %w", err)
		}
		if ok {
			return idempotency.Claimed, nil
		}
		v, err := s.rdb.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			continue // expired between the two commands: claim again
		}
		if err != nil {
			return 0, fmt.Errorf("redisstore: lookup: %w", err)
		}
		if v == "d" {
			return idempotency.Done, nil
		}
		return idempotency.Busy, nil
	}
	return idempotency.Busy, nil
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, id, token string, ttl time.Duration) error {
	var px int64
	if ttl > 0 {
		px = ms(ttl)
	}
	n, err := completeScript.Run(ctx, s.rdb, []string{s.prefix + id}, "c:"+token, px).Int()
	if err != nil {
		return fmt.Errorf("redisstore: complete: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: complete %s: %w", id, idempotency.ErrLeaseLost)
	}
	return nil
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, id, token string) error {
	if err := releaseScript.Run(ctx, s.rdb, []string{s.prefix + id}, "c:"+token).Err(); err != nil {
		return fmt.Errorf("redisstore: release: %w", err)
	}
	return nil
}

// Forget implements idempotency.Store.
func (s *Store) Forget(ctx context.Context, id string) error {
	if err := s.rdb.Del(ctx, s.prefix+id).Err(); err != nil {
		return fmt.Errorf("redisstore: forget: %w", err)
	}
	return nil
}
