// Package otel adds OpenTelemetry tracing and metrics to BabelQueue for Go.
package otel
