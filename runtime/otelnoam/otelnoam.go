// Package otelnoam observes noamgen repositories with OpenTelemetry: Hook
// is a runtime.Hook that makes one span per repository operation and
// records its duration and errors as metrics.
//
//	games := game.NewGameMongoRepository(db, runtime.WithHook(otelnoam.Hook()))
//
// Spans are named after the generated method, prefixed with the
// aggregate ("Game.SetFirstPlayer", "Game.Get"), of kind client, children
// of the caller's span, with the database semantic conventions'
// attributes db.system.name (mongodb, redis, aws.dynamodb or bbolt),
// db.collection.name and db.operation.name (the method), and noam.entries
// (the entries written or read, at most MaxEntries of them) and
// noam.round_trips (runtime.Call.RoundTrips). A failed operation's span
// has the error recorded, status Error and the attribute error.type.
//
// Metrics: the histogram db.client.operation.duration (seconds) of every
// operation and the counter noam.client.operation.errors of the failed
// ones, both with the attributes db.system.name, db.collection.name,
// db.operation.name, and error.type on errors.
package otelnoam

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/noamgen/noamgen/runtime"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/noamgen/noamgen/runtime/otelnoam"

// MaxEntries caps the noam.entries attribute: a listing of many blocks
// reads thousands of entries, which a span should not carry. A capped
// span lists the first MaxEntries and has noam.entries_total, the count.
const MaxEntries = 64

// Option configures Hook.
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider makes spans with tp instead of the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider records metrics with mp instead of the global
// provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// Hook returns the hook; give it to a generated constructor with
// runtime.WithHook.
func Hook(opts ...Option) runtime.Hook {
	c := config{tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider()}
	for _, o := range opts {
		o(&c)
	}
	tracer := c.tp.Tracer(ScopeName)
	meter := c.mp.Meter(ScopeName)
	// The instruments of a meter that fails to make them are no-ops:
	// the operations run unobserved rather than fail.
	dur, _ := meter.Float64Histogram("db.client.operation.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of noamgen repository operations."))
	errs, _ := meter.Int64Counter("noam.client.operation.errors",
		metric.WithUnit("{error}"), metric.WithDescription("Failed noamgen repository operations."))
	return func(ctx context.Context, call *runtime.Call, next func(context.Context) error) error {
		base := []attribute.KeyValue{
			attribute.String("db.system.name", call.System),
			attribute.String("db.collection.name", call.Collection),
			attribute.String("db.operation.name", call.Op),
		}
		start := time.Now()
		ctx, span := tracer.Start(ctx, call.Aggregate+"."+call.Op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(base...))
		err := next(ctx)
		elapsed := time.Since(start).Seconds()
		entries := call.Entries
		if len(entries) > MaxEntries {
			span.SetAttributes(attribute.Int("noam.entries_total", len(entries)))
			entries = entries[:MaxEntries]
		}
		span.SetAttributes(attribute.StringSlice("noam.entries", entries), attribute.Int("noam.round_trips", call.RoundTrips))
		if err != nil {
			et := attribute.String("error.type", ErrorType(err))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(et)
			base = append(base, et)
			errs.Add(ctx, 1, metric.WithAttributes(base...))
		}
		dur.Record(ctx, elapsed, metric.WithAttributes(base...))
		span.End()
		return err
	}
}

// kinds are the runtime's error kinds, named as error.type says them.
var kinds = []struct {
	err  error
	name string
}{
	{runtime.ErrNotFound, "not_found"},
	{runtime.ErrDuplicate, "duplicate"},
	{runtime.ErrConflict, "conflict"},
	{runtime.ErrBadCursor, "bad_cursor"},
	{runtime.ErrInvalid, "invalid"},
	{runtime.ErrOverflow, "overflow"},
	{runtime.ErrOutOfRange, "out_of_range"},
	{runtime.ErrTooLarge, "too_large"},
	{runtime.ErrUnknownOutcome, "unknown_outcome"},
	{runtime.ErrUnavailable, "unavailable"},
	{runtime.ErrUnreadable, "unreadable"},
	{runtime.ErrNotReady, "not_ready"},
	{runtime.ErrIndexBuilding, "index_building"},
	{runtime.ErrLayout, "layout"},
	{context.DeadlineExceeded, "deadline_exceeded"},
	{context.Canceled, "canceled"},
}

// ErrorType is the error.type of err: the runtime's kind of it
// ("not_found", "conflict", ...), "deadline_exceeded" or "canceled", and
// "_OTHER" for any other error.
func ErrorType(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "_OTHER"
}
