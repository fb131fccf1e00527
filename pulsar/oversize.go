package pulsar

import (
	"errors"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// tooBig reports a send refused because the message is larger than the
// broker's maxMessageSize (the client checks it against the size the
// broker announced; without chunking the same message is refused every
// time). Only that refusal becomes driver.ErrTooLarge: a transient failure
// is never taken for it.
func tooBig(err error) bool {
	if errors.Is(err, pulsar.ErrMessageTooLarge) {
		return true
	}
	var perr *pulsar.Error
	return errors.As(err, &perr) && perr.Result() == pulsar.MessageTooBig
}

// MessageID returns the Pulsar message id of msg, a delivery this transport
// received, as text ("" for any other message). It implements
// driver.MessageLocator: the App names the original of a bounded dead
// letter (reason "oversize") by this id.
func (t *Transport) MessageID(msg *babelqueue.ReceivedMessage) string {
	d := deliveryOf(msg)
	if d == nil || d.msg == nil {
		return ""
	}
	id := d.msg.ID()
	if id == nil {
		return ""
	}
	return id.String()
}

var _ driver.MessageLocator = (*Transport)(nil)
