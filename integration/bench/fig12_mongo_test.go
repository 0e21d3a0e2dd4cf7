package bench

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/example/bench/fig12"
	"github.com/noamgen/noamgen/integration/mongotest"
)

// TestFigure12 runs the paper's Figure 12 experiment (example/bench/fig12)
// on the in-process FerretDB, or the MongoDB at NOAM_MONGO_URI. It is a
// measurement, not a test: it runs only when NOAM_FIG12 is set, and writes
// fig12-ferretdb.md and fig12-ferretdb.png (fig12-mongo.* with
// NOAM_MONGO_URI) into NOAM_FIG12_OUT (default: the current directory).
// NOAM_FIG12_SIZES (default 10,30,100,300,1000), NOAM_FIG12_OPS (default
// 50) and NOAM_FIG12_REPEATS (default 2) size the run:
//
//	NOAM_FIG12=1 NOAM_FIG12_OUT=$PWD go test ./bench -run Figure12 -v -timeout 0
func TestFigure12(t *testing.T) {
	if os.Getenv("NOAM_FIG12") == "" {
		t.Skip("a measurement: set NOAM_FIG12=1 to run it")
	}
	cfg := fig12.Config{Sizes: []int{10, 30, 100, 300, 1000}, Ops: 50, Repeats: 2, Seed: 1, Progress: os.Stderr}
	if s := os.Getenv("NOAM_FIG12_SIZES"); s != "" {
		cfg.Sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Sizes = append(cfg.Sizes, n)
		}
	}
	for env, p := range map[string]*int{"NOAM_FIG12_OPS": &cfg.Ops, "NOAM_FIG12_REPEATS": &cfg.Repeats} {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			*p = n
		}
	}
	name, out := "ferretdb", os.Getenv("NOAM_FIG12_OUT")
	cfg.Store = "FerretDB v1.24.0 in-process (SQLite)"
	if mongotest.Real() {
		name, cfg.Store = "mongo", "MongoDB at "+os.Getenv(mongotest.EnvURI)
	}
	if out == "" {
		out = "."
	}
	results, err := fig12.Run(t.Context(), cfg, fig12.MongoLayouts(mongotest.Start(t)))
	if err != nil {
		t.Fatal(err)
	}
	md, err := fig12.WriteReport(out, name, cfg, results)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", md)
}
