package fig12

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// layoutNames returns the layouts of results in first-seen order.
func layoutNames(results []Result) []string {
	var names []string
	for _, r := range results {
		if !slices.Contains(names, r.Layout) {
			names = append(names, r.Layout)
		}
	}
	return names
}

func find(results []Result, size int, workload, layout string) (Result, bool) {
	for _, r := range results {
		if r.Size == size && r.Workload == workload && r.Layout == layout {
			return r, true
		}
	}
	return Result{}, false
}

func sizes(results []Result) []int {
	var s []int
	for _, r := range results {
		if !slices.Contains(s, r.Size) {
			s = append(s, r.Size)
		}
	}
	slices.Sort(s)
	return s
}

func us(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// WriteMarkdown writes the results as one Markdown table per workload:
// a row per size, per layout its mean, median and p95 latency and ops/s
// (of operation time: 1/mean), then the ratios of mean latencies to
// ROUNDS's.
func WriteMarkdown(w io.Writer, cfg Config, results []Result) error {
	names := layoutNames(results)
	var b strings.Builder
	fmt.Fprintf(&b, "Store: %s. %d operations per layout, workload and size in each of %d repetitions (layouts interleaved in chunks of %d operations), games of %d to %d rounds (about 8 KB), seed %d.\n",
		cfg.Store, cfg.Ops, cfg.Repeats, min(cfg.chunk(), cfg.Ops), BaseRounds, BaseRounds+ExtraRounds-1, cfg.Seed)
	for _, wl := range Workloads {
		fmt.Fprintf(&b, "\n%s\n\n| games |", wl.Name)
		for _, n := range names {
			fmt.Fprintf(&b, " %s mean / p50 / p95, ops/s |", n)
		}
		for _, n := range names {
			if n != "ROUNDS" {
				fmt.Fprintf(&b, " %s/ROUNDS |", n)
			}
		}
		b.WriteString("\n|---:|")
		b.WriteString(strings.Repeat("---:|", 2*len(names)-1))
		b.WriteString("\n")
		for _, size := range sizes(results) {
			fmt.Fprintf(&b, "| %d |", size)
			for _, n := range names {
				r, _ := find(results, size, wl.Name, n)
				fmt.Fprintf(&b, " %s / %s / %s, %.0f |", us(r.Mean), us(r.P50), us(r.P95), r.OpsPerSec)
			}
			base, _ := find(results, size, wl.Name, "ROUNDS")
			for _, n := range names {
				if n != "ROUNDS" {
					r, _ := find(results, size, wl.Name, n)
					fmt.Fprintf(&b, " %.2fx (p50 %.2fx) |", float64(r.Mean)/float64(base.Mean), float64(r.P50)/float64(base.P50))
				}
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WritePNG plots the results like the paper's Figure 12: one panel per
// workload, ops/s against the number of games on a log axis, one line per
// layout; title (the store) is added to each panel's title.
func WritePNG(w io.Writer, title string, results []Result) error {
	return writePNG(w, title, "operations per second", results, func(r Result) float64 { return r.OpsPerSec })
}

// WriteMedianPNG is WritePNG with 1/median latency on the y axis: the
// typical operation's rate, which a few slow outliers (a shared machine's
// scheduling, GC) do not move.
func WriteMedianPNG(w io.Writer, title string, results []Result) error {
	return writePNG(w, title, "1 / median latency (per second)", results, func(r Result) float64 {
		if r.P50 <= 0 {
			return 0
		}
		return 1 / r.P50.Seconds()
	})
}

func writePNG(w io.Writer, title, ylabel string, results []Result, value func(Result) float64) error {
	names := layoutNames(results)
	colors := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	}
	// A log y axis when the values span more than a factor of 20 (as on
	// FerretDB, where the layouts differ by orders of magnitude).
	lo, hi := 0.0, 0.0
	for _, r := range results {
		if v := value(r); v > 0 {
			if lo == 0 || v < lo {
				lo = v
			}
			hi = max(hi, v)
		}
	}
	logY := lo > 0 && hi/lo > 20
	plots := make([][]*plot.Plot, 1)
	for _, wl := range Workloads {
		p := plot.New()
		p.Title.Text = wl.Name + ", " + title
		p.X.Label.Text = "database size (games)"
		p.Y.Label.Text = ylabel
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Tick.Marker = wholeTicks{}
		if logY {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		}
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		for li, n := range names {
			var xys plotter.XYs
			for _, size := range sizes(results) {
				if r, ok := find(results, size, wl.Name, n); ok && value(r) > 0 {
					xys = append(xys, plotter.XY{X: float64(size), Y: value(r)})
				}
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			c := colors[li%len(colors)]
			line.Color, line.Width = c, vg.Points(1.5)
			points.Color, points.Shape = c, []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}}[li%4]
			points.Radius = vg.Points(3)
			p.Add(line, points)
			p.Legend.Add(n, line, points)
		}
		// From zero (or lo on a log axis), with room above the lines for
		// the legend.
		if logY {
			p.Y.Min, p.Y.Max = lo/1.5, hi*4
		} else {
			p.Y.Min, p.Y.Max = 0, p.Y.Max*1.3
		}
		plots[0] = append(plots[0], p)
	}
	const panelW, panelH = 5 * vg.Inch, 4 * vg.Inch
	img := vgimg.New(panelW*vg.Length(len(Workloads)), panelH)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(Workloads), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for j, p := range plots[0] {
		p.Draw(canvases[0][j])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// wholeTicks are the default ticks labelled without decimals.
type wholeTicks struct{}

func (wholeTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = fmt.Sprintf("%.0f", ticks[i].Value)
		}
	}
	return ticks
}

// SaveJSON writes cfg and results as JSON (roundsbench -replot reads it).
func SaveJSON(path string, cfg Config, results []Result) error {
	data, err := json.MarshalIndent(struct {
		Config  Config
		Results []Result
	}{cfg, results}, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// LoadJSON reads what SaveJSON wrote.
func LoadJSON(path string) (Config, []Result, error) {
	var v struct {
		Config  Config
		Results []Result
	}
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &v)
	}
	return v.Config, v.Results, err
}

// WriteReport writes fig12-NAME.md (the Markdown table), fig12-NAME.png
// (the plot of ops/s) and fig12-NAME-p50.png (the plot of 1/median
// latency) and fig12-NAME.json (the results) into dir and returns the
// Markdown.
func WriteReport(dir, name string, cfg Config, results []Result) ([]byte, error) {
	if err := SaveJSON(filepath.Join(dir, "fig12-"+name+".json"), cfg, results); err != nil {
		return nil, err
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, cfg, results); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "fig12-"+name+".md"), md.Bytes(), 0o644); err != nil {
		return nil, err
	}
	var png bytes.Buffer
	if err := WritePNG(&png, cfg.Store, results); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "fig12-"+name+".png"), png.Bytes(), 0o644); err != nil {
		return nil, err
	}
	png.Reset()
	if err := WriteMedianPNG(&png, cfg.Store, results); err != nil {
		return nil, err
	}
	return md.Bytes(), os.WriteFile(filepath.Join(dir, "fig12-"+name+"-p50.png"), png.Bytes(), 0o644)
}
