package fig12

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/bench"
)

// TestRunAndReport runs a small Figure 12 on bbolt (two sizes, a few
// operations: a check that the program works, not a measurement) and
// checks the results, the progress bar, the Markdown tables, the plots and
// the JSON that -replot reads.
func TestRunAndReport(t *testing.T) {
	dir := t.TempDir()
	var dbs [3]*bbolt.DB
	for i := range dbs {
		db, err := bbolt.Open(filepath.Join(dir, string(rune('a'+i))+".db"), 0o600, &bbolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	layouts := Layouts(bench.NewEAOGameBoltRepository(dbs[0]), bench.NewRoundsGameBoltRepository(dbs[1]),
		bench.NewBlocksGameBoltRepository(dbs[2]), bench.NewGameRoundBoltRepository(dbs[2]))
	var bar bytes.Buffer
	cfg := Config{Store: "bbolt (test)", Sizes: []int{4, 8}, Ops: 30, Repeats: 2, Chunk: 7, Seed: 3, Progress: &bar}
	results, err := Run(context.Background(), cfg, layouts)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(cfg.Sizes) * len(Workloads) * len(layouts); len(results) != want {
		t.Fatalf("%d results, want %d", len(results), want)
	}
	for _, r := range results {
		if r.Ops != cfg.Ops*cfg.Repeats || r.Mean <= 0 || r.P50 > r.P95 || r.OpsPerSec <= 0 {
			t.Errorf("result %+v: want %d operations and positive, ordered times", r, cfg.Ops*cfg.Repeats)
		}
	}
	// Every layout holds the largest size's games, one generation of each
	// (a full game is replaced by the next), of 10 to 13 rounds.
	for _, l := range layouts {
		for i := range 8 {
			found := 0
			for gen := range 200 {
				n, err := l.Get(context.Background(), gameID(i, gen))
				if err != nil {
					continue
				}
				found++
				if n < BaseRounds || n >= BaseRounds+ExtraRounds {
					t.Errorf("%s: game %d has %d rounds", l.Name, i, n)
				}
			}
			if found != 1 {
				t.Errorf("%s: game %d exists in %d generations, want 1", l.Name, i, found)
			}
		}
	}
	if !strings.Contains(bar.String(), "100% done") {
		t.Errorf("progress bar: %q", bar.String())
	}

	md, err := WriteReport(dir, "test", cfg, results)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range Workloads {
		if !strings.Contains(string(md), w.Name) {
			t.Errorf("the report has no table %q", w.Name)
		}
	}
	for _, row := range []string{"| 4 |", "| 8 |", "EAO/ROUNDS", "BLOCKS/ROUNDS"} {
		if strings.Count(string(md), row) < 3 {
			t.Errorf("the report has %q fewer than 3 times:\n%s", row, md)
		}
	}
	for _, name := range []string{"fig12-test.png", "fig12-test-p50.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 100 {
			t.Errorf("%s: %v, %v", name, img, err)
		}
	}
	cfg2, results2, err := LoadJSON(filepath.Join(dir, "fig12-test.json"))
	if err != nil || !reflect.DeepEqual(results2, results) || cfg2.Store != cfg.Store {
		t.Errorf("LoadJSON: %+v, %d results, %v", cfg2, len(results2), err)
	}
}
