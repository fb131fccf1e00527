package kafka

import (
	"context"

	kafkago "github.com/segmentio/kafka-go"
)

// FetchOffsets is c.OffsetFetch, attempted again while the broker answers
// with a transient error, a few times over about two seconds or until ctx
// ends. A transient error is the group's coordinator moving, or still
// loading the group's offsets, as it may for a group it never saw. The
// response's own error is returned as the error, beside the response, so
// that a caller can tell kafkago.GroupIdNotFound apart with errors.Is. For
// tools that read a group's offsets without joining it (lag, redrive).
func FetchOffsets(ctx context.Context, c *kafkago.Client, req *kafkago.OffsetFetchRequest) (*kafkago.OffsetFetchResponse, error) {
	var res *kafkago.OffsetFetchResponse
	err := retrying(ctx, transient, func() error {
		var err error
		res, err = c.OffsetFetch(ctx, req)
		if err == nil {
			err = res.Error
		}
		return err
	})
	return res, err
}
