package kafka

import "context"

// CheckConnection connects to the configured brokers with the transport's
// TLS and SASL settings until one answers. It returns an error wrapping
// ErrConnectionRejected, naming the broker and the reason (certificate
// not accepted, TLS on one side only, SASL refused), when no broker
// answers and one rejects the settings; otherwise nil, also when the
// brokers are merely down. ctx bounds the whole check. Tools call it to
// name the real cause of a failed connection.
func (t *Transport) CheckConnection(ctx context.Context) error {
	return t.checkConnection(ctx)
}
