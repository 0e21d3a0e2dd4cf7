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
	// One test binary runs every package's check (layoutcheck.Run).
	// Redis: a server started for each package's check and stopped after
	// it (NOAM_REDIS_URL is left out). DynamoDB: dynalite per package's
	// check, or NOAM_DYNAMO_ENDPOINT with a table prefix per check.
	layoutcheck.Run(t, moduleRoot, dirs, []layoutcheck.Store{layoutcheck.Bolt, layoutcheck.Redis, layoutcheck.Dynamo}, "NOAM_REDIS_URL=")
}
