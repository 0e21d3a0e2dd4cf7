package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/runtime"
)

type (
	fileDB    struct{ path string }
	netClient interface{ Addr() string }
	tcpClient struct{ addr string }
	repo      interface{ Where() string }
	fileRepo  struct {
		db   *fileDB
		opts int
	}
	netRepo struct{ c netClient }
)

func (c *tcpClient) Addr() string { return c.addr }
func (r *fileRepo) Where() string { return "file " + r.db.path }
func (r *netRepo) Where() string  { return "net " + r.c.Addr() }
func newFileRepo(db *fileDB, opts ...runtime.Option) *fileRepo {
	return &fileRepo{db: db, opts: len(opts)}
}
func newNetRepo(c netClient, _ ...runtime.Option) *netRepo { return &netRepo{c} }

func TestOpeners(t *testing.T) {
	o := runtime.NewOpeners[repo]("Game")
	runtime.AddOpener(o, "file", newFileRepo)
	runtime.AddOpener(o, "net", newNetRepo)
	if got := strings.Join(o.Stores(), ","); got != "file,net" {
		t.Fatalf("Stores() = %s", got)
	}

	r, err := o.Open(&fileDB{"a.db"}, runtime.WithClock(nil), runtime.WithClock(nil))
	if err != nil {
		t.Fatal(err)
	}
	if r.Where() != "file a.db" || r.(*fileRepo).opts != 2 {
		t.Fatalf("opened %s with %d options, want file a.db with 2", r.Where(), r.(*fileRepo).opts)
	}
	// An interface handle type takes every implementation.
	if r, err = o.Open(&tcpClient{"127.0.0.1:1"}); err != nil || r.Where() != "net 127.0.0.1:1" {
		t.Fatalf("Open(tcpClient) = %v, %v", r, err)
	}

	for _, c := range []struct {
		name   string
		handle any
		want   string
	}{
		{"untyped nil", nil, "noam: Game: New over <nil>: invalid value: nil handle"},
		{"nil pointer", (*fileDB)(nil), "noam: Game: New over *runtime_test.fileDB: invalid value: nil handle"},
		{"nil implementation", (*tcpClient)(nil), "noam: Game: New over *runtime_test.tcpClient: invalid value: nil handle"},
		{"other type", "a.db", "noam: Game: New over string: invalid value: no store of this package takes it (file takes *runtime_test.fileDB, net takes runtime_test.netClient)"},
		{"value, not pointer", fileDB{"a.db"}, "no store of this package takes it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := o.Open(c.handle)
			if !errors.Is(err, runtime.ErrInvalid) || r != nil {
				t.Fatalf("Open = %v, %v; want no repository and ErrInvalid", r, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}

	empty := runtime.NewOpeners[repo]("Game")
	if _, err := empty.Open(&fileDB{}); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "(none)") {
		t.Fatalf("Open on no stores = %v", err)
	}
}
