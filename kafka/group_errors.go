package kafka

import (
	"errors"

	kafkago "github.com/segmentio/kafka-go"
)

// permanent reports whether err from a consumer group (joining, syncing,
// fetching, committing) cannot heal by retrying: the credentials,
// authorizations or group id are wrong. kafka-go keeps retrying everything
// else (a coordinator moving or loading, a rebalance, a broken
// connection), so the transport reports those and carries on.
func permanent(err error) bool {
	var ke kafkago.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke {
	case kafkago.SASLAuthenticationFailed,
		kafkago.UnsupportedSASLMechanism,
		kafkago.IllegalSASLState,
		kafkago.GroupAuthorizationFailed,
		kafkago.TopicAuthorizationFailed,
		kafkago.ClusterAuthorizationFailed,
		kafkago.InvalidGroupId,
		kafkago.InconsistentGroupProtocol,
		kafkago.UnsupportedVersion:
		return true
	}
	return false
}
