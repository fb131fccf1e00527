package otel

import (
	"context"

	"github.com/babelqueue/babelqueue-go/kafka"
)

// ReinjectObserver returns the hook to give kafka.WithReinjectObserver on
// the transport a kafka.Reinjector runs on. For every record the Reinjector
// writes back, it records MetricReinjectLag: the time the broker
// acknowledged the write minus the time the record was due (its timestamp
// plus its tier), with messaging.system = kafka (or the system set by
// WithSystem) and messaging.destination.name = the work topic. It only
// records a measurement: it never fails and never blocks on I/O.
func (t *Telemetry) ReinjectObserver() kafka.ReinjectObserver {
	system := t.cfg.system
	if system == "" {
		system = "kafka"
	}
	return func(ev kafka.ReinjectEvent) {
		t.metrics.ReinjectLag(context.Background(), system, ev.WorkTopic, ev.Lag())
	}
}
