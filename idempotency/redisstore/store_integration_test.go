//go:build integration

package redisstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/babelqueue/babelqueue-go/idempotency"
	"github.com/babelqueue/babelqueue-go/idempotency/redisstore"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

// client connects to BQ_REDIS_URL (tools/brokers/redis.sh up); the test
// fails when it is not set.
func client(t testing.TB) *redis.Client {
	t.Helper()
	url := os.Getenv("BQ_REDIS_URL")
	if url == "" {
		t.Fatal("BQ_REDIS_URL is not set: start Redis with tools/brokers/redis.sh up (make integration does)")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("Redis at %s: %v", url, err)
	}
	return rdb
}

func TestRedisStore(t *testing.T) {
	rdb := client(t)
	storetest.Run(t, func(t *testing.T) idempotency.Store {
		s, err := redisstore.New(rdb)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
