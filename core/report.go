package babelqueue

import (
	"context"
	"fmt"
	"log/slog"
)

func (a *App) logger() *slog.Logger {
	if a.cfg.logger != nil {
		return a.cfg.logger
	}
	return slog.Default()
}

// reportError logs err under the constant message what and hands it to
// the OnError hook.
func (a *App) reportError(ctx context.Context, what string, err error, attrs ...slog.Attr) {
	a.logger().LogAttrs(ctx, slog.LevelError, what, append(attrs, slog.String("error", detail(err)))...)
	if fn := a.cfg.onError; fn != nil {
		safely(func() { fn(err) })
	}
}

// reportWarning logs err as a warning under the constant message what and
// hands it to the OnWarning hook.
func (a *App) reportWarning(ctx context.Context, what string, err error, attrs ...slog.Attr) {
	a.logger().LogAttrs(ctx, slog.LevelWarn, what, append(attrs, slog.String("error", detail(err)))...)
	if fn := a.cfg.onWarning; fn != nil {
		safely(func() { fn(err) })
	}
}

// detail returns the text of err without the DeliveryError prefix, whose
// fields are logged as attributes already.
func detail(err error) string {
	if d, ok := err.(*DeliveryError); ok {
		return d.Err.Error()
	}
	return err.Error()
}

// safely runs fn, recovering and discarding a panic.
func safely(fn func()) {
	defer func() { _ = recover() }()
	fn()
}

// exceptionName returns the Go type name recorded as dead_letter.exception:
// the %T of err once every fmt.Errorf %w layer (and the App's own
// DeliveryError) has been unwrapped, so that
// fmt.Errorf("charge: %w", &PaymentError{}) records "*shop.PaymentError".
// An error made by errors.New records "*errors.errorString"; a layer that
// wraps several errors (errors.Join, several %w) is not unwrapped.
func exceptionName(err error) string {
	for {
		switch err.(type) {
		case *DeliveryError:
		default:
			if name := fmt.Sprintf("%T", err); name != "*fmt.wrapError" {
				return name
			}
		}
		inner, ok := err.(interface{ Unwrap() error })
		if !ok || inner.Unwrap() == nil {
			return fmt.Sprintf("%T", err)
		}
		err = inner.Unwrap()
	}
}
