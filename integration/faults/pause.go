package faults

import (
	"context"
	"io"
	"net"
	"sync"
)

// Pauser is a dialer (install it with options.Client().SetDialer) whose
// connections stop forwarding while it is paused: to the client, the
// server has stopped answering (a paused process), and the client's own
// socket deadlines work as on a real connection (the client holds one end
// of a net.Pipe, a proxy goroutine pair the other).
type Pauser struct {
	mu   sync.Mutex
	open chan struct{} // closed while not paused
}

// NewPauser returns a Pauser that forwards.
func NewPauser() *Pauser {
	open := make(chan struct{})
	close(open)
	return &Pauser{open: open}
}

// Pause stops every connection, present and future, from forwarding
// until resume is called.
func (p *Pauser) Pause() (resume func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gate := make(chan struct{})
	p.open = gate
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

func (p *Pauser) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

// DialContext dials the server and returns the client's end of the proxy.
func (p *Pauser) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	server, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	client, proxy := net.Pipe()
	stop := func() { server.Close(); proxy.Close() }
	go p.pump(server, proxy, stop)
	go p.pump(proxy, server, stop)
	return client, nil
}

// pump copies src to dst, holding what it read while paused.
func (p *Pauser) pump(dst io.Writer, src io.Reader, stop func()) {
	defer stop()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
