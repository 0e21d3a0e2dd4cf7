// Package faults injects faults into the MongoDB wire protocol for the
// fault-injection tests of the lookup protocol: a command monitor numbers
// the commands an operation sends, and a wrapping dialer acts on the
// connection that carries command k.
package faults

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Mode is the fault injected at command k.
type Mode int

const (
	// None injects nothing (a dry run counts the commands).
	None Mode = iota
	// Crash closes the connection before command k is sent: the server
	// never sees it, the client sees a network error.
	Crash
	// LostReply sends command k and waits for its reply (so that the
	// server has applied it), then drops the reply and closes the
	// connection: the client sees a network error.
	LostReply
	// CancelAfter cancels the operation's context once command k has
	// succeeded: command k+1 is never sent.
	CancelAfter
	// CancelInFlight sends command k, waits for its reply, then cancels
	// the context and drops the reply: the client sees its context
	// cancelled while the reply was in flight.
	CancelInFlight
	// Stall holds command k before sending it until Release is called.
	Stall
	// CancelAndCut is CancelAfter that also crashes every command sent
	// after the cancel (the clean-up of the write cannot reach the
	// server).
	CancelAndCut
)

func (m Mode) String() string {
	return [...]string{"none", "crash", "lost-reply", "cancel-after", "cancel-in-flight", "stall", "cancel-and-cut"}[m]
}

// Wire is the hook: install it with Options, then Arm it around one
// operation.
type Wire struct {
	mu       sync.Mutex
	armed    bool
	n, k     int
	mode     Mode
	match    func(*event.CommandStartedEvent) bool
	cancel   context.CancelFunc
	target   int32 // request id of command k, while its fault is pending
	fired    bool
	names    []string
	colls    []string // the collection each command names, "" if none
	release  chan struct{}
	stalled  chan struct{}
	released bool
	cut      bool // CancelAndCut has cancelled: crash every command
}

// Options returns client options that install w (and disable the driver's
// retries, so that every fault reaches the repository).
func (w *Wire) Options() *options.ClientOptions {
	return options.Client().
		SetMonitor(&event.CommandMonitor{Started: w.started, Succeeded: w.succeeded}).
		SetDialer(w).
		SetRetryReads(false).
		SetRetryWrites(false)
}

// Arm injects mode at the k-th command (from 1) sent from now on, or at
// the first command for which match returns true when match is not nil;
// cancel cancels the operation's context.
func (w *Wire) Arm(k int, mode Mode, match func(*event.CommandStartedEvent) bool, cancel context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.n, w.k, w.mode, w.match, w.cancel = true, 0, k, mode, match, cancel
	w.target, w.fired, w.names, w.colls = 0, false, nil, nil
	w.release, w.stalled, w.released, w.cut = make(chan struct{}), make(chan struct{}), false, false
}

// Disarm stops counting and returns the names of the commands seen and
// whether the fault was injected.
func (w *Wire) Disarm() (names []string, fired bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.target, w.cut = false, 0, false
	return w.names, w.fired
}

// Collections returns the collection each command seen since Arm names
// ("" for a command without one), in the order of the names Disarm returns.
func (w *Wire) Collections() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.colls
}

// Stalled is closed once a Stall fault holds its command.
func (w *Wire) Stalled() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stalled
}

// Release lets a stalled command go.
func (w *Wire) Release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.released {
		w.released = true
		close(w.release)
	}
}

func (w *Wire) started(_ context.Context, e *event.CommandStartedEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.armed {
		return
	}
	w.n++
	w.names = append(w.names, e.CommandName)
	coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
	w.colls = append(w.colls, coll)
	hit := w.mode != None && !w.fired && w.target == 0
	if w.match != nil {
		hit = hit && w.match(e)
	} else {
		hit = hit && w.n == w.k
	}
	if hit {
		w.target = int32(e.RequestID)
		if w.mode == CancelAfter || w.mode == CancelAndCut {
			w.fired = true
		}
	}
}

func (w *Wire) succeeded(_ context.Context, e *event.CommandSucceededEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed && (w.mode == CancelAfter || w.mode == CancelAndCut) && w.target != 0 && int32(e.RequestID) == w.target {
		w.target = 0
		w.cut = w.mode == CancelAndCut
		w.cancel()
	}
}

// DialContext dials and wraps the connection.
func (w *Wire) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, w: w}, nil
}

type conn struct {
	net.Conn
	w    *Wire
	drop Mode // the reply to drop, after a LostReply or CancelInFlight write
}

var (
	errCrash = &net.OpError{Op: "write", Net: "tcp", Err: errors.New("faults: connection crashed before the command")}
	errLost  = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("faults: reply lost")}
)

func (c *conn) Write(b []byte) (int, error) {
	if len(b) >= 8 {
		id := int32(binary.LittleEndian.Uint32(b[4:8]))
		w := c.w
		w.mu.Lock()
		hit := w.target != 0 && id == w.target && w.mode != CancelAfter && w.mode != CancelAndCut
		mode, release, stalled := w.mode, w.release, w.stalled
		if hit {
			w.target, w.fired = 0, true
		}
		cut := w.cut
		w.mu.Unlock()
		if cut {
			c.Conn.Close()
			return 0, errCrash
		}
		if hit {
			switch mode {
			case Crash:
				c.Conn.Close()
				return 0, errCrash
			case LostReply, CancelInFlight:
				c.drop = mode
			case Stall:
				close(stalled)
				<-release
			}
		}
	}
	return c.Conn.Write(b)
}

func (c *conn) Read(b []byte) (int, error) {
	if c.drop == None {
		return c.Conn.Read(b)
	}
	mode := c.drop
	c.drop = None
	// Read the whole reply: the server has applied the command.
	var hdr [4]byte
	if _, err := io.ReadFull(c.Conn, hdr[:]); err == nil {
		_, _ = io.CopyN(io.Discard, c.Conn, int64(binary.LittleEndian.Uint32(hdr[:]))-4)
	}
	if mode == CancelInFlight {
		c.w.mu.Lock()
		cancel := c.w.cancel
		c.w.mu.Unlock()
		cancel()
	}
	c.Conn.Close()
	return 0, errLost
}
