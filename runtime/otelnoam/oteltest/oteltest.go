// Package oteltest checks runtime/otelnoam on a store: the test of every
// store's harness calls Check (the main module's stores in package
// otelnoam's tests, MongoDB's in the integration module).
package oteltest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/otelnoam"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// matchModel makes the Match repository over a database of any store.
var matchModel = storetest.Opener[model.MatchRepository](model.NewMatchRepository)

// matches opens the Match repository of db's store with opts.
func matches(t *testing.T, db storetest.DB, opts ...runtime.Option) model.MatchRepository {
	r := matchModel.On(t, db, opts...)
	if err := r.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// Check runs otelnoam's hook on the Match repository of harness h's store,
// with the SDK's in-memory span recorder and metric reader: the spans of
// Create, SetRegion and a failed Get (names, kind, parent, attributes, the
// error), the duration histogram and the error counter.
func Check(t *testing.T, h storetest.Harness) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	db := h.Open(t)
	r := matches(t, db, runtime.WithHook(otelnoam.Hook(otelnoam.WithTracerProvider(tp), otelnoam.WithMeterProvider(mp))))

	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	if err := r.Create(ctx, &model.Match{ID: "o1", Code: "c-o1", Rounds: []model.Round{{Serial: "s1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.SetRegion(ctx, "o1", "north"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "missing"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get of a missing block: %v", err)
	}
	parent.End()

	ended := spans.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byName[s.Name()] = s
	}
	// The store's OpenTelemetry name, as its harness declares it (the
	// conformance suite checks that the adapter's Caps are the harness's).
	system := h.Caps.System
	if system == "" {
		t.Fatalf("the %s harness declares no Caps.System", h.Name)
	}
	for _, name := range []string{"Match.Create", "Match.SetRegion", "Match.Get"} {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no span %s among %d", name, len(ended))
		}
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s: kind %v", name, s.SpanKind())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("%s is not a child of the caller's span", name)
		}
		attrs := attribute.NewSet(s.Attributes()...)
		for k, want := range map[attribute.Key]string{"db.system.name": system, "db.collection.name": "matches", "db.operation.name": name[len("Match."):]} {
			if v, _ := attrs.Value(k); v.AsString() != want {
				t.Errorf("%s: %s = %q, want %q", name, k, v.AsString(), want)
			}
		}
		if v, _ := attrs.Value("noam.round_trips"); v.AsInt64() < 1 {
			t.Errorf("%s: noam.round_trips = %d", name, v.AsInt64())
		}
	}
	set := attribute.NewSet(byName["Match.SetRegion"].Attributes()...)
	if v, _ := set.Value("noam.entries"); !slices.Equal(v.AsStringSlice(), []string{"region", "version"}) {
		t.Errorf("Match.SetRegion: noam.entries = %q", v.AsStringSlice())
	}
	get := byName["Match.Get"]
	if get.Status().Code != codes.Error || len(get.Events()) == 0 || get.Events()[0].Name != "exception" {
		t.Errorf("Match.Get of a missing block: status %v, events %v", get.Status(), get.Events())
	}
	getAttrs := attribute.NewSet(get.Attributes()...)
	if v, _ := getAttrs.Value("error.type"); v.AsString() != "not_found" {
		t.Errorf("Match.Get of a missing block: error.type %q", v.AsString())
	}
	if byName["Match.Create"].Status().Code == codes.Error {
		t.Errorf("Match.Create: status %v", byName["Match.Create"].Status())
	}

	// A call refused before anything is sent is timed and counted too,
	// with a span of its own.
	if err := r.Create(context.Background(), nil); !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("Create(nil): %v", err)
	}
	if ended := spans.Ended(); len(ended) == 0 || ended[len(ended)-1].Name() != "Match.Create" || ended[len(ended)-1].Status().Code != codes.Error {
		t.Errorf("Create(nil) ended no failed span Match.Create")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var ops int64
	failed := map[string]int64{} // by error.type
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				if m.Name == "db.client.operation.duration" && m.Unit == "s" {
					for _, p := range d.DataPoints {
						ops += int64(p.Count)
					}
				}
			case metricdata.Sum[int64]:
				if m.Name == "noam.client.operation.errors" {
					for _, p := range d.DataPoints {
						v, _ := p.Attributes.Value("error.type")
						failed[v.AsString()] += p.Value
					}
				}
			}
		}
	}
	// EnsureIndexes, Create, SetRegion, Get, Create(nil).
	if want := map[string]int64{"not_found": 1, "invalid": 1}; ops != 5 || !maps.Equal(failed, want) {
		t.Errorf("metrics: %d operations timed, errors counted by error.type %v; want 5, %v", ops, failed, want)
	}
}
