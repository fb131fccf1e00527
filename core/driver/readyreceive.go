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
