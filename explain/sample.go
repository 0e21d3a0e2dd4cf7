package explain

import (
	"context"
	"fmt"

	"github.com/noamgen/noamgen/templates"
)

// Sample reads at most n real blocks of every aggregate from each store of
// r whose connection settings conn names (by templates.ConnSetting.Name,
// e.g. "bolt" for a bbolt file, "mongo" and "db" for MongoDB) and records
// their sizes in Aggregate.Samples. Stores conn does not name are left
// out. Nothing is written to any store.
func (r *Report) Sample(ctx context.Context, n int, conn map[string]string) error {
	if n <= 0 {
		return fmt.Errorf("the sample size must be positive, not %d", n)
	}
	for _, a := range r.Aggregates {
		for _, st := range r.Stores {
			ex, _ := templates.ExplainerOf(st)
			if ex.Sample == nil {
				continue
			}
			s, err := ex.Sample(ctx, a.model, conn, n)
			if err != nil {
				return fmt.Errorf("sampling %s on %s: %w", a.Name, st, err)
			}
			if s == nil {
				continue
			}
			if a.Samples == nil {
				a.Samples = map[string]*templates.Sample{}
			}
			a.Samples[st] = s
		}
	}
	return nil
}

// ConnSettings lists the connection settings of every store with a
// sampler, each name once (the first store's usage wins).
func ConnSettings() []templates.ConnSetting {
	var out []templates.ConnSetting
	seen := map[string]bool{}
	for _, st := range templates.ExplainedStores() {
		ex, _ := templates.ExplainerOf(st)
		for _, c := range ex.Conn {
			if !seen[c.Name] {
				seen[c.Name] = true
				out = append(out, c)
			}
		}
	}
	return out
}
