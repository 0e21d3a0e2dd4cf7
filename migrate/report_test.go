package migrate

import (
	"strings"
	"testing"
)

// TestReporter: the progress lines and the report the command writes
// from the program's events.
func TestReporter(t *testing.T) {
	events := `{"aggregate":"Player","phase":"count","scanned":64,"migrated":10,"current":54}
{"aggregate":"Player","phase":"count","scanned":100,"migrated":12,"current":88,"done":true}
{"aggregate":"Player","phase":"migrate","scanned":64,"migrated":10,"current":54}
something the application printed
{"aggregate":"Player","phase":"migrate","scanned":100,"migrated":12,"current":87}
{"aggregate":"Player","phase":"migrate","scanned":100,"migrated":12,"current":87,"failed":[{"id":"p7","from":"etf","err":"unreadable"}],"done":true}
`
	var out, errs strings.Builder
	r := &reporter{stdout: &out, stderr: &errs, ok: true}
	if err := r.read(strings.NewReader(events)); err != nil {
		t.Fatal(err)
	}
	wantErrs := "Player: counting: 64 blocks, 10 to migrate\n" +
		"Player: [############........] 64 blocks, 10 migrated\n" +
		"something the application printed\n" +
		"Player: [####################] 100 blocks, 12 migrated\n"
	if errs.String() != wantErrs {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs.String(), wantErrs)
	}
	wantOut := "Player: 100 blocks: 12 migrated, 87 already current, 1 failed\n  block p7 (stored etf): unreadable\n"
	if out.String() != wantOut || r.ok {
		t.Errorf("stdout:\n%s\nwant:\n%s (ok %v)", out.String(), wantOut, r.ok)
	}
}
