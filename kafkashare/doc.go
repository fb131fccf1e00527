// Package kafkashare is a BabelQueue binding on a Kafka share group
// (KIP-932, "queues for Kafka", Kafka 4.2 and later), on franz-go.
//
// A share group hands a topic's records to any number of members, more
// than its partitions, each record acquired under a lock and settled one by
// one. Transport maps the driver.Transport contract onto it:
//
//   - Receive hands out acquired records one at a time, those of the
//     oldest poll first; each member (a franz-go client) of the queue
//     acquires them on a poller goroutine of its own. A message's body
//     and headers view the record's bytes, the header map built only
//     when the App needs it (driver.ReceivedMessage.DeferHeaders);
//   - Ack accepts a record: the broker never delivers it again;
//   - HandBack releases it: the broker delivers it again, to any member,
//     with its delivery count increased (Features.HandBack: HandBackNack);
//   - a retry (a Send of IntentRetry) writes nothing and releases the
//     record, at once or after WithRetryDelay with its lock renewed, so
//     the broker's delivery count carries the attempt
//     (Features.SettlesRetry);
//   - dead letters and every other write go to their topics through
//     franz-go's idempotent producer (acks=all): a produce retried after a
//     lost response is stored once. A write a request carried waits for
//     the broker's answer even past its context (Transport.Send).
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
// next poll (a renewal does not carry over), so one client cannot acquire
// more while records of its previous poll are still in handlers. A member
// therefore polls again only once every record it acquired is settled: the
// poll barrier. It fetches only when polled (no prefetch, whose records
// would wait behind the barrier with their locks running and not
// renewable). The share fetch of that poll carries the accepts of the
// previous records: a broker round trip, longer when the broker is busy.
//
// While held, a record's acquisition lock is renewed each third of the lock
// (WithLockDuration sets the group's lock); a record whose lock passed
// without a confirmed renewal is reported (WithOnLockLost and a warning).
// A slow record holds back the next poll of its member only. Because of the
// barrier, a member never holds two deliveries of one record at once;
// across members, the renewed lock keeps a record with one member.
//
// # Members
//
// Each queue runs WithMembers members (default 2), each with a poller
// goroutine (queue.run) that polls as soon as its member holds nothing and
// a Receive asks for records (until that Receive's deadline, while its
// context lives). Receive hands out the oldest poll's records first, so
// members free up in turn, and one member's share fetch overlaps the
// handling of the others' records. With one member the fetch round trip
// and the handling of the poll's records follow each other; two make the
// default overlap them, even for one handler. Many handlers stay busy when
// the records the other members hold outlast a fetch: for n handlers of
// latency L and a fetch round trip F, (members-1) × WithMaxRecords ≥ F·n/L
// (the bench runs 3 members of 4n records for 5 ms handlers).
//
// What a member costs: a franz-go client (its connections, its share
// heartbeats, the group membership) and the records it acquires. A queue
// holds at most members × WithMaxRecords records; those acquired and not
// yet received stay held, renewed, until they are received or the
// transport closes, and other processes of the group cannot take them
// meanwhile. Close releases them, so they come back with their delivery
// count one higher (an attempt, by the rule above). WithMembers(1) halves
// both, for slow handlers whose records are better left to other
// processes. The members join together: the first delivery comes with the
// same share heartbeat as with one. Not taken: decoding the envelopes
// ahead on the poller (no gain on two shared cores).
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
