package driver

// ReadyReceiver is what a Transport may implement besides Receive: a
// receive that never waits. A binding that reads ahead of the App (a
// prefetching consumer) implements it, so that the App's concurrent loop
// takes a message the binding already holds on the worker that just
// settled one, instead of waking another goroutine to call Receive.
type ReadyReceiver interface {
	// ReceiveReady returns the next message of queue when the binding
	// already holds one, received from the broker and not yet handed out,
	// and (nil, false) otherwise. It neither waits, nor calls the broker,
	// nor subscribes. A message it returns is reserved exactly as one
	// Receive returns, and in the same order: the Receive and ReceiveReady
	// calls of one queue take from one sequence. Like Receive, it is safe
	// to call from several goroutines.
	ReceiveReady(queue string) (*ReceivedMessage, bool)
}

// ReadyNotifier is a ReadyReceiver that also tells when a message becomes
// ready while nobody waits in Receive. The App's concurrent loop then lets
// a worker run the message it received itself without first waking
// another worker to wait in Receive: should a message arrive meanwhile,
// the binding's call wakes one.
type ReadyNotifier interface {
	ReadyReceiver
	// NotifyReady makes the binding call fn each time it holds a newly
	// ready message of queue (one ReceiveReady would return) while no
	// Receive of queue is waiting for one; nil stops the calls. fn runs on
	// a goroutine of the binding and must not block nor call its receive.
	// It reports false, registering nothing, when the binding cannot yet
	// (queue not read so far); the caller may try again later.
	NotifyReady(queue string, fn func()) bool
}

// PartitionReadyReceiver is what a Transport of partitioned queues may
// implement besides Receive: a receive that never waits, for one
// partition. The App's concurrent loop calls it when a lane ordered by
// partition has settled its last message: the lane goes on with the next
// message of its partition on the same worker, instead of waiting for the
// queue's receive order to reach that message (behind the messages of
// other partitions, or beyond the pending bound).
type PartitionReadyReceiver interface {
	// ReceiveReadyFrom returns the next message of partition of queue
	// (the ReceivedMessage.Partition it reports) when the binding already
	// holds one, received from the broker and not yet handed out, and
	// (nil, false) otherwise. It neither waits, nor calls the broker, nor
	// subscribes. A message it returns is reserved exactly as one Receive
	// returns, and comes in its partition's order: Receive,
	// ReceiveReady and ReceiveReadyFrom calls of one queue take each
	// partition's messages from one sequence. Like Receive, it is safe to
	// call from several goroutines.
	ReceiveReadyFrom(queue string, partition int32) (*ReceivedMessage, bool)
}
