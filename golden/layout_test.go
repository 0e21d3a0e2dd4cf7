package golden_test

import (
	"testing"

	"github.com/noamgen/noamgen/internal/layoutcheck"
)

// TestGoldenLayout checks, for every good golden case and every store this
// module can run, that the entry keys a store writes for a sample block of
// each aggregate are exactly what the model says (layoutcheck). MongoDB is
// checked the same way by the integration module (TestGoldenLayoutMongo).
func TestGoldenLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a test binary per golden case; skipped with -short")
	}
	var dirs []string
	for _, c := range cases(t) {
		if !c.bad && c.skip == "" {
			dirs = append(dirs, c.dir)
		}
	}
	// One test binary runs every package's check (layoutcheck.Run), on
	// every registered store whose test server runs in this module (each
	// store's templates.Test says how it opens one). Redis: a local
	// server, not NOAM_REDIS_URL's, which is left out.
	stores := layoutcheck.Stores("")
	if len(stores) == 0 {
		t.Fatal("no registered store says how a test opens it (templates.Store.Test)")
	}
	layoutcheck.Run(t, moduleRoot, dirs, stores, "NOAM_REDIS_URL=")
}
