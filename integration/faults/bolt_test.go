package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
)

func openBolt(t *testing.T, path string) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func boltDump(t *testing.T, db *bbolt.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				out[string(name)+"/"+string(k)] = string(v)
				return nil
			})
		})
	}))
	return out
}

// TestBoltCancelledContexts: every write with lookups, called with a
// cancelled context, fails with context.Canceled and changes nothing; with
// a live context afterwards it succeeds and everything is indexed.
func TestBoltCancelledContexts(t *testing.T) {
	for _, op := range writeOps() {
		t.Run(op.name, func(t *testing.T) {
			db := openBolt(t, filepath.Join(t.TempDir(), "h.db"))
			defer db.Close()
			r := hotel.NewHotelBoltRepository(db)
			must(t, r.EnsureIndexes(bg))
			must(t, r.Create(bg, h1()))
			must(t, r.Create(bg, h2()))
			before := boltDump(t, db)
			ctx, cancel := context.WithCancel(bg)
			cancel()
			if err := op.run(ctx, r); !errors.Is(err, context.Canceled) {
				t.Fatalf("with a cancelled context: %v", err)
			}
			if after := boltDump(t, db); !reflect.DeepEqual(before, after) {
				t.Fatal("a write with a cancelled context changed the database")
			}
			checkInvariants(t, "after the cancelled write", r, op)
			err := op.run(bg, r)
			if !errors.Is(err, op.failsWith) || (op.failsWith == nil && err != nil) {
				t.Fatalf("retry: %v", err)
			}
			if st := checkInvariants(t, "after a retry", r, op); !reflect.DeepEqual(st, op.new) {
				t.Fatalf("after a retry the state is %s", show(st))
			}
		})
	}
}

const childEnv = "NOAM_FAULTS_BOLT_CHILD"

// TestBoltKilledWriter: a child process writes hotels with lookups in a
// loop (Create, Put, SetName, SetCity, Update, Delete, names taken from a
// small pool so that unique claims collide) and is killed with SIGKILL
// mid-write, three times. After each kill the database opens, every
// stored hotel is found by each of its values and by nothing else, no
// name is held twice, and Repair finds nothing to fix (a bbolt write is
// one transaction).
func TestBoltKilledWriter(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		boltChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "h.db")
	db := openBolt(t, path)
	r := hotel.NewHotelBoltRepository(db)
	must(t, r.EnsureIndexes(bg))
	must(t, db.Close())
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBoltKilledWriter$")
		cmd.Env = append(os.Environ(), childEnv+"="+path)
		out, err := cmd.StdoutPipe()
		must(t, err)
		cmd.Stderr = os.Stderr
		must(t, cmd.Start())
		sc := bufio.NewScanner(out)
		writes := 0
		deadline := time.Now().Add(time.Duration(200+100*round) * time.Millisecond)
		for sc.Scan() && time.Now().Before(deadline) {
			writes++
		}
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		db := openBolt(t, path)
		r := hotel.NewHotelBoltRepository(db)
		var all []*hotel.Hotel
		for h, err := range r.All(bg) {
			must(t, err)
			all = append(all, h)
		}
		// Every stored hotel is old or new as a whole and fully indexed.
		op := writeOp{old: map[string]*hotel.Hotel{}, new: map[string]*hotel.Hotel{}}
		for _, h := range all {
			op.old[h.ID], op.new[h.ID] = h, h
		}
		checkInvariants(t, fmt.Sprintf("round %d, after the kill", round), r, op)
		rep, err := r.Repair(bg)
		must(t, err)
		if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
			t.Fatalf("round %d: Repair fixed something after a kill: %v", round, rep)
		}
		t.Logf("round %d: killed after %d writes, %d hotels stored", round, writes, len(all))
		must(t, db.Close())
	}
}

// boltChild writes in a loop, printing a line per write, until killed.
func boltChild(path string) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r := hotel.NewHotelBoltRepository(db)
	names := []string{"A", "B", "C", "D"}
	for i := 0; ; i++ {
		id := fmt.Sprintf("h%d", rand.IntN(6))
		name := names[rand.IntN(len(names))]
		h := &hotel.Hotel{ID: id, Name: name + id, City: names[rand.IntN(4)], Stars: rand.IntN(5), Tags: names[:rand.IntN(4)], Address: hotel.Address{Zip: fmt.Sprint(rand.IntN(3))}, Rooms: []hotel.Room{}}
		var err error
		switch i % 6 {
		case 0:
			err = r.Create(bg, h)
		case 1:
			err = r.Put(bg, h)
		case 2:
			err = r.SetName(bg, id, name) // collides across hotels
		case 3:
			err = r.SetCity(bg, id, names[rand.IntN(4)])
		case 4:
			err = r.Update(bg, id, hotel.HotelUpdate{Name: runtime.Ptr(name + "x"), Tags: &[]string{name}})
		case 5:
			err = r.Delete(bg, id)
		}
		if err != nil && !errors.Is(err, runtime.ErrDuplicate) && !errors.Is(err, runtime.ErrNotFound) {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		fmt.Println(i)
	}
}
