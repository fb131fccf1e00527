// Package kafka is the Apache Kafka binding of BabelQueue (CONTRACT.md
// 6), a babelqueue.Transport on the pure-Go github.com/segmentio/kafka-go.
//
// # Records
//
// The record value is the envelope, byte for byte. The contract fields are
// projected onto record headers (UTF-8): bq-job, bq-trace-id,
// bq-message-id, bq-schema-version, bq-source-lang and bq-attempts, so a
// peer in another language routes on bq-job without parsing the body. The
// record timestamp is meta.created_at. Keys are placed with the Java
// client's murmur2 partitioner (Murmur2Balancer), so a Go and a Java
// producer put a key on the same partition, and every republish keeps the
// key byte for byte.
//
//	tr, err := kafka.New(kafka.WithBrokers("127.0.0.1:9092"), kafka.WithGroupID("orders-workers"))
//	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"))
//	if err != nil {
//		return err // every option problem, joined
//	}
//
// # Publishing
//
// Writes are acknowledged by the broker before a publish returns. A lone
// Publish waits at most the linger (WithLinger, 1ms) instead of kafka-go's
// one-second batch timeout; concurrent publishers to a partition share a
// produce request, and PublishBatch hands many records to the writer at
// once.
//
// # Consuming
//
// Receive (the App's) and Pop fetch without committing, and Ack commits
// afterwards (process-then-commit, at-least-once). Deliveries may be
// acknowledged and handed back in any order and from several goroutines:
// per partition only the end of the contiguous prefix of settled
// deliveries is committed, so a commit never passes a delivery that is
// neither acknowledged nor handed back; HandBack (Rewind) puts the group
// back at a record. Commits are batched (WithCommitInterval) and flushed
// when a reader closes or loses its partitions. The bq-attempts header is
// the authoritative retry counter: when it differs from the body's
// attempts, only that number is rewritten. A record whose
// bq-schema-version header is present, not blank and not 1 is handed over
// untouched for the App to dead-letter unchanged (IntentForward); the
// OnSchemaVersionRejected hook names the version. DESIGN.md describes the
// acknowledgement ledger, the group member reader and its revocation
// protocol.
//
// # Retry tiers
//
// Kafka has no delayed delivery. With WithRetryTiers, a retry goes to the
// tier topic RetryTopic(topic, n) chosen from the attempt count
// (PublishRetryForAttempt) and a delayed publish to the smallest tier that
// covers the delay (PublishDelayed); a Reinjector carries the records back
// to their work topic once the tier has elapsed. EnsureTopics creates the
// work topic, its tiers (LogAppendTime) and its dead-letter topic.
//
// # Known limitations
//
//   - A republished record (dead letters, releases, redrives, retries
//     without tiers, PublishFrom's republish mode) is stamped with meta.created_at, as CONTRACT.md 6 says. Time-based
//     retention counts from that timestamp, so a message older than a
//     topic's retention.ms (a weeks-old dead letter redriven to a work topic
//     with a shorter retention) can be deleted by the broker soon after it
//     is written. Keep the retention of work and dead-letter topics longer
//     than the age of the messages redriven into them. Retry-tier records,
//     restored and forwarded records are stamped with the write time.
//   - On a LogAppendTime tier the Reinjector anchors a record's wait on the
//     broker's append time, which it reads from the record batch headers of
//     its own fetches (kafka-go itself reports the producer's timestamp);
//     on a CreateTime tier, on the producer's timestamp. This binding
//     stamps retry-tier records with the publish time.
package kafka
