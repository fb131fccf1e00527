// Package kafkashare is a BabelQueue binding on a Kafka share group
// (KIP-932, "queues for Kafka", Kafka 4.2 and later), on franz-go.
//
// A share group hands a topic's records to any number of members, more
// than its partitions, each record acquired under a lock and settled one by
// one. Transport maps the driver.Transport contract onto it:
//
//   - Receive acquires records for the queue's member (one franz-go
//     client per queue) and hands them out one at a time;
//   - Ack accepts a record: the broker never delivers it again;
//   - HandBack releases it: the broker delivers it again, to any member,
//     with its delivery count increased (Features.HandBack: HandBackNack);
//   - a retry (a Send of IntentRetry) writes nothing and releases the
//     record, at once or after WithRetryDelay with its lock renewed, so
//     the broker's delivery count carries the attempt
//     (Features.SettlesRetry);
//   - dead letters and every other write go to their topics through
//     franz-go's idempotent producer (acks=all): a produce retried after a
//     lost response is stored once.
//
// # Attempts
//
// One rule reconciles the envelope's attempts with the broker's delivery
// count: the Kafka binding's count (a valid bq-attempts header, else the
// body's attempts; CONTRACT.md 6), then at least deliveryCount-1, the
// deliveries the broker counted before this one (the Pulsar rule of
// CONTRACT.md 3 and 5 with the delivery count as redelivery count). When
// the count moves, the body's attempts and the bq-attempts header carry it.
// At the App's max attempts the message is dead-lettered with the standard
// dead_letter block and the original accepted; a poison record is
// dead-lettered at once. The group's share.delivery.count.limit is set to
// WithDeliveryCountLimit (default 10), above the App's max attempts, since
// the broker archives a record at that count without a dead letter.
//
// # The poll barrier and locks
//
// franz-go accepts every record of a poll that was not acknowledged by the
// next poll. A queue therefore polls again only once every record it
// acquired is settled, and fetches only when polled (no prefetch, whose
// records would wait behind the barrier with their locks running). A slow
// record holds back the next poll of its member, not the others' records of
// the same poll. WithMembers runs several members per queue, polled in
// turn, so that one member's poll overlaps the handling of another's. While held, a record's acquisition lock is renewed each
// third of the lock (WithLockDuration sets the group's lock); a record whose
// lock passed without a confirmed renewal is reported (WithOnLockLost and a
// warning). Because of the barrier, a member never holds two deliveries of
// one record at once; across members, the renewed lock keeps a record with
// one member.
//
// # Ordering
//
// A share group keeps no order between records: released or retried
// records come back after later ones, and members share partitions. Within
// one poll the App's WithConcurrency(n, OrderKey) keeps the records of one
// key in the order received; across polls and members no order holds.
// Choose a classic group (the kafka module) when order, replay from an
// offset or a per-partition position matters.
package kafkashare
