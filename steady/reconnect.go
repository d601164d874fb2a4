package steady

import (
	"context"
	"sync"
)

// reconnecting is a step's load whose every connection is closed and
// dialled again after every N calls on it (Config.ReconnectEvery), so that
// a window pays connection setup (TCP, and a full TLS handshake over TLS)
// at a known rate beside its calls. Each connection is a one-connection
// transport of the step's protocol, made by dial; worker i shares
// connection i%conns with the others on it, as in the plain transports.
// The call that finds its connection due dials the new one, and the
// slot's other workers wait for it, as a client's callers wait while it
// reconnects; the old connection is closed once its calls in flight have
// ended, so that no call fails because another reconnected.
//
// Each call takes the slot's lock twice: a cost only this mode pays (the
// plain transports are used directly when connections are never
// renewed).
type reconnecting struct {
	slots []*reconnSlot
}

// reconnSlot is one connection and its successors.
type reconnSlot struct {
	ctx   context.Context // the step's: connections and streams outlive a window
	every int64
	dial  func(ctx context.Context) (transport, error)

	mu  sync.Mutex
	cur *reconnConn
}

// reconnConn is one connection of a slot (a one-connection transport).
type reconnConn struct {
	tr       transport
	calls    int64 // calls begun on it
	inflight int
	retired  bool // replaced: closed when inflight reaches 0
}

func newReconnecting(ctx context.Context, conns, every int, dial func(context.Context) (transport, error)) (*reconnecting, error) {
	r := &reconnecting{}
	for i := 0; i < conns; i++ {
		tr, err := dial(ctx)
		if err != nil {
			r.close()
			return nil, err
		}
		r.slots = append(r.slots, &reconnSlot{ctx: ctx, every: int64(every), dial: dial, cur: &reconnConn{tr: tr}})
	}
	return r, nil
}

func (r *reconnecting) caller(ctx context.Context, i int) (caller, error) {
	s := r.slots[i%len(r.slots)]
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	c, err := cur.tr.caller(s.ctx, i)
	if err != nil {
		return nil, err
	}
	return &reconnCaller{s: s, worker: i, conn: cur, c: c}, nil
}

func (r *reconnecting) close() {
	for _, s := range r.slots {
		s.mu.Lock()
		cur := s.cur
		s.mu.Unlock()
		cur.tr.close()
	}
}

// acquire returns the connection the next call goes over, dialling its
// successor first when the current one has carried every calls, and
// counts the call on it.
func (s *reconnSlot) acquire() (*reconnConn, error) {
	s.mu.Lock()
	var old *reconnConn
	if s.cur.calls >= s.every {
		tr, err := s.dial(s.ctx)
		if err != nil {
			s.mu.Unlock()
			return nil, err // the next call tries again
		}
		old = s.cur
		old.retired = true
		s.cur = &reconnConn{tr: tr}
		if old.inflight > 0 {
			old = nil // its last call closes it
		}
	}
	c := s.cur
	c.calls++
	c.inflight++
	s.mu.Unlock()
	if old != nil {
		old.tr.close()
	}
	return c, nil
}

// release ends a call on c, closing c when it was replaced and this was
// its last call in flight.
func (s *reconnSlot) release(c *reconnConn) {
	s.mu.Lock()
	c.inflight--
	done := c.retired && c.inflight == 0
	s.mu.Unlock()
	if done {
		c.tr.close()
	}
}

// reconnCaller is one worker's caller on its slot's current connection,
// made again when the connection is replaced (for a stream scenario, a
// new stream on the new connection).
type reconnCaller struct {
	s      *reconnSlot
	worker int
	conn   *reconnConn
	c      caller
}

func (k *reconnCaller) call(ctx context.Context) error {
	conn, err := k.s.acquire()
	if err != nil {
		return err
	}
	defer k.s.release(conn)
	if conn != k.conn {
		c, err := conn.tr.caller(k.s.ctx, k.worker)
		if err != nil {
			return err
		}
		k.conn, k.c = conn, c
	}
	return k.c.call(ctx)
}
