package decomp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The coordinator's connections carry frames: a kind byte, a little-endian uint64 length and
// the payload. Besides the run's messages they carry heartbeats, so that a rank that dies or
// hangs is noticed by the others while they wait in a GPU kernel or an NCCL transfer, and the
// reason a run failed, so that every rank stops with the same message.
const (
	frameData  = 1
	frameBeat  = 2
	frameAbort = 3 // payload: why the run failed
	frameBye   = 4 // the rank leaves the run on purpose: its end of file is no failure
)

// magic starts both sides of the handshake: a stray connection (a port scanner, another
// program at the port) is told apart from a rank before anything else is read.
var magic = [8]byte{'T', 'E', 'M', 'P', 'E', 'S', 'T', 1}

// joinLimit bounds every message until the run says what it needs (SetLimit): the join's
// messages (fingerprints, the NCCL id, the plan) are small.
const joinLimit = 1 << 20

// JoinOptions are a multi-process run's settings for its coordinator.
type JoinOptions struct {
	// Timeout bounds the wait for the other ranks at the start, and how long any rank may stay
	// silent (no heartbeat, or no awaited message) before the others give up on it
	// (0: 5 minutes).
	Timeout time.Duration
	// Secret, shared by every rank, authenticates the ranks to rank 0: each proves it knows
	// it by a keyed hash of a fresh challenge, so it never travels.
	Secret string
	// RunID names this run (a launcher's job id): a process of another run, such as a rank 0
	// left over from an earlier job at the same port, is refused.
	RunID string
	// Log receives rank 0's notes on connections it refused (nil: none).
	Log func(string)
	// OnFailure is called once, on a goroutine of its own, when the run fails (a rank died,
	// hung, or reported an error): the caller aborts what may be blocked elsewhere (NCCL).
	OnFailure func(error)
}

// peer is one connection of the coordinator: on rank 0 one per other rank, on the others
// the one to rank 0.
type peer struct {
	rank int
	conn net.Conn
	wmu  sync.Mutex
	data chan []byte   // the data frames, in order; closed when the connection ends
	gone chan struct{} // closed when read returns
	last atomic.Int64
	bye  atomic.Bool
}

func newPeer(rank int, conn net.Conn) *peer {
	return &peer{rank: rank, conn: conn, data: make(chan []byte, 1024), gone: make(chan struct{})}
}

// frame writes one frame; writes of one connection are serialised.
func (p *peer) frame(kind byte, b []byte, deadline time.Duration) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if deadline > 0 {
		p.conn.SetWriteDeadline(time.Now().Add(deadline))
		defer p.conn.SetWriteDeadline(time.Time{})
	}
	var h [9]byte
	h[0] = kind
	binary.LittleEndian.PutUint64(h[1:], uint64(len(b)))
	if _, err := p.conn.Write(h[:]); err != nil {
		return err
	}
	_, err := p.conn.Write(b)
	return err
}

// readFrame reads one frame of at most limit bytes.
func readFrame(r io.Reader, limit int64) (byte, []byte, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	size := binary.LittleEndian.Uint64(h[1:])
	if size > uint64(limit) {
		return 0, nil, fmt.Errorf("a message of %d bytes; this run's are at most %d", size, limit)
	}
	b := make([]byte, size)
	_, err := io.ReadFull(r, b)
	return h[0], b, err
}

// Coordinator links the processes of a multi-process run over TCP: rank 0 listens at the
// coordinator address and every other rank connects to it. It carries what NCCL needs before
// it exists (the unique id), the owned rows gathered on rank 0 wherever the run looks at its
// state (observations, snapshots, checkpoints, --out), small messages that keep the ranks in
// step, and, for runs without NCCL, the halos (Exchange). It also watches the other ranks:
// when one dies, hangs or fails, every rank learns why within the timeout.
type Coordinator struct {
	Rank, Ranks int
	peers       []*peer // rank 0: by rank (nil for itself); other ranks: [0] is rank 0
	timeout     time.Duration
	limit       atomic.Int64
	onFailure   func(error)

	failOnce sync.Once
	failed   chan struct{}
	err      error
	done     chan struct{}
	doneOnce sync.Once
}

// Connect joins the run as rank of ranks through addr (HOST:PORT; an empty host is this
// machine's loopback: rank 0 listens on all interfaces only when given a host to listen at).
// Rank 0 waits up to the timeout for every other rank, refusing connections that are not
// ranks of this run; the others retry connecting for as long.
func Connect(addr string, rank, ranks int, o JoinOptions) (*Coordinator, error) {
	if ranks < 1 || rank < 0 || rank >= ranks {
		return nil, fmt.Errorf("--rank %d --ranks %d: ranks are numbered 0 to ranks-1", rank, ranks)
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	addr, err := bindAddr(addr)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{Rank: rank, Ranks: ranks, timeout: o.Timeout, onFailure: o.OnFailure,
		failed: make(chan struct{}), done: make(chan struct{})}
	c.limit.Store(joinLimit)
	run := sha256.Sum256([]byte(o.RunID))
	if rank == 0 {
		err = c.listen(addr, run, o)
	} else {
		err = c.dial(addr, run, o)
	}
	if err != nil {
		c.closeConns()
		return nil, err
	}
	for _, p := range c.peers {
		if p != nil {
			p.last.Store(time.Now().UnixNano())
			go c.read(p)
		}
	}
	go c.watch()
	return c, nil
}

// bindAddr is the address rank 0 listens at and the others dial: an empty host is the
// loopback, so that a run on one machine is not open to the network by default.
func bindAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("coordinator %q: %w (write HOST:PORT, e.g. 127.0.0.1:29500)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// mac is the proof of the secret a rank sends: a keyed hash of rank 0's challenge and the
// hello's fields.
func mac(secret string, nonce []byte, hello []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write(nonce)
	h.Write(hello)
	return h.Sum(nil)
}

// listen is rank 0's side of the join.
func (c *Coordinator) listen(addr string, run [32]byte, o JoinOptions) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("coordinator %s: %w", addr, err)
	}
	defer ln.Close()
	type admitted struct {
		conn net.Conn
		rank int
		err  error
	}
	deadline := time.Now().Add(o.Timeout)
	in := make(chan admitted)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// Each connection proves itself on its own goroutine: a silent stray one must
			// not hold up the ranks behind it.
			go func() {
				r, err := admit(conn, run, c.Ranks, o.Secret, min(time.Until(deadline), 10*time.Second))
				select {
				case in <- admitted{conn, r, err}:
				case <-stop:
					conn.Close()
				}
			}()
		}
	}()
	c.peers = make([]*peer, c.Ranks)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for joined := 1; joined < c.Ranks; {
		select {
		case a := <-in:
			reason := ""
			switch {
			case a.err != nil:
				reason = a.err.Error()
			case c.peers[a.rank] != nil:
				reason = fmt.Sprintf("a second process joined as rank %d", a.rank)
			}
			if reason != "" {
				if a.rank > 0 {
					status(a.conn, reason)
				}
				a.conn.Close()
				if o.Log != nil {
					o.Log(fmt.Sprintf("coordinator %s: refused a connection from %s: %s", addr, a.conn.RemoteAddr(), reason))
				}
				continue
			}
			if err := status(a.conn, ""); err != nil {
				a.conn.Close()
				continue
			}
			a.conn.SetDeadline(time.Time{})
			c.peers[a.rank] = newPeer(a.rank, a.conn)
			joined++
		case <-timer.C:
			var missing []int
			for r := 1; r < c.Ranks; r++ {
				if c.peers[r] == nil {
					missing = append(missing, r)
				}
			}
			return fmt.Errorf("coordinator %s: ranks %v did not join within %v (start every rank with the same --ranks, --coordinator and secret)", addr, missing, o.Timeout)
		}
	}
	return nil
}

// admit runs rank 0's half of one connection's handshake: it sends the magic, a fresh
// challenge and the run's id, and checks the hello that comes back. A refused connection is
// returned with its rank where the hello named one (the rank is then told why).
func admit(conn net.Conn, run [32]byte, ranks int, secret string, wait time.Duration) (int, error) {
	conn.SetDeadline(time.Now().Add(max(wait, time.Second)))
	var nonce [16]byte
	rand.Read(nonce[:])
	out := append(append(append([]byte(nil), magic[:]...), nonce[:]...), run[:]...)
	if _, err := conn.Write(out); err != nil {
		return 0, err
	}
	var hello [8 + 4 + 4 + 32 + 32]byte
	n, err := io.ReadFull(conn, hello[:])
	switch {
	case n > 0 && (n < 8 || [8]byte(hello[:8]) != magic):
		return 0, fmt.Errorf("not a Tempest rank (it sent %q)", hello[:min(n, 8)])
	case err != nil:
		return 0, fmt.Errorf("no hello: %w", err)
	}
	r, nr := int(binary.LittleEndian.Uint32(hello[8:])), int(binary.LittleEndian.Uint32(hello[12:]))
	if !hmac.Equal(hello[48:], mac(secret, nonce[:], hello[:48])) {
		return r, errors.New("the secret differs (give every rank the same --secret or TEMPEST_SECRET)")
	}
	if [32]byte(hello[16:48]) != run {
		return r, errors.New("a rank of another run (its run id differs: a process of an earlier job?)")
	}
	if nr != ranks || r <= 0 || r >= ranks {
		return r, fmt.Errorf("it joined as rank %d of %d; this run has ranks 1 to %d to join once each", r, nr, ranks-1)
	}
	return r, nil
}

// status ends a handshake: an empty reason admits the rank.
func status(conn net.Conn, reason string) error {
	p := &peer{conn: conn}
	return p.frame(frameData, []byte(reason), 5*time.Second)
}

// dial is the side of the join of the ranks other than 0.
func (c *Coordinator) dial(addr string, run [32]byte, o JoinOptions) error {
	deadline := time.Now().Add(o.Timeout)
	stale := false
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			var retry bool
			if retry, err = c.hello(conn, run, o.Secret, deadline); err == nil {
				return nil
			}
			conn.Close()
			if !retry {
				return fmt.Errorf("rank %d: coordinator %s: %w", c.Rank, addr, err)
			}
			stale = true
		}
		if time.Now().After(deadline) {
			if stale {
				return fmt.Errorf("rank %d: the process listening at %s is rank 0 of another run (its run id differs from this one's); stop it, or give this run another port", c.Rank, addr)
			}
			return fmt.Errorf("rank %d: cannot reach the coordinator (rank 0) at %s: %w", c.Rank, addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hello is a joining rank's half of the handshake; retry says the process at the address
// belongs to another run, which may give way to this run's rank 0.
func (c *Coordinator) hello(conn net.Conn, run [32]byte, secret string, deadline time.Time) (retry bool, err error) {
	conn.SetDeadline(time.Now().Add(max(min(time.Until(deadline), 10*time.Second), time.Second)))
	var ch [8 + 16 + 32]byte
	if _, err := io.ReadFull(conn, ch[:]); err != nil {
		return true, fmt.Errorf("no answer from rank 0: %w", err)
	}
	if [8]byte(ch[:8]) != magic {
		return false, errors.New("the process listening there is not a Tempest coordinator")
	}
	if [32]byte(ch[24:]) != run {
		return true, errors.New("rank 0 there belongs to another run")
	}
	hello := make([]byte, 48, 80)
	copy(hello, magic[:])
	binary.LittleEndian.PutUint32(hello[8:], uint32(c.Rank))
	binary.LittleEndian.PutUint32(hello[12:], uint32(c.Ranks))
	copy(hello[16:], run[:])
	hello = append(hello, mac(secret, ch[8:24], hello)...)
	if _, err := conn.Write(hello); err != nil {
		return true, err
	}
	_, reason, err := readFrame(conn, 4096)
	if err != nil {
		return true, fmt.Errorf("no answer from rank 0: %w", err)
	}
	if len(reason) > 0 {
		return false, fmt.Errorf("rank 0 refused this rank: %s", reason)
	}
	conn.SetDeadline(time.Time{})
	c.peers = []*peer{newPeer(0, conn)}
	return false, nil
}

// read receives one connection's frames until it ends.
func (c *Coordinator) read(p *peer) {
	defer close(p.gone)
	defer close(p.data)
	for {
		kind, b, err := readFrame(p.conn, c.limit.Load())
		if err != nil {
			select {
			case <-c.done:
				return
			default:
			}
			switch {
			case p.bye.Load():
			case connectionEnded(err):
				c.fail(endedError(p.rank))
			default:
				c.fail(fmt.Errorf("rank %d: %w", p.rank, err))
			}
			return
		}
		p.last.Store(time.Now().UnixNano())
		switch kind {
		case frameData:
			select {
			case p.data <- b:
			case <-c.done:
				return
			}
		case frameAbort:
			c.fail(errors.New(string(b)))
		case frameBye:
			p.bye.Store(true)
		}
	}
}

// beat is how often the ranks send heartbeats: often enough that a silent rank is told from
// a slow one well within the timeout.
func (c *Coordinator) beat() time.Duration {
	return min(max(c.timeout/8, 10*time.Millisecond), 2*time.Second)
}

// watch sends heartbeats and gives up on ranks silent for longer than the timeout.
func (c *Coordinator) watch() {
	t := time.NewTicker(c.beat())
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		now := time.Now()
		for _, p := range c.peers {
			if p == nil || p.bye.Load() {
				continue
			}
			if p.wmu.TryLock() { // a connection busy with a message needs no heartbeat
				p.wmu.Unlock()
				p.frame(frameBeat, nil, c.timeout) // a broken connection shows in read
			}
			if silent := now.Sub(time.Unix(0, p.last.Load())); silent > c.timeout {
				c.fail(fmt.Errorf("rank %d sent nothing for %v (hung, stopped or unreachable; --rank-timeout sets how long to wait)", p.rank, silent.Round(time.Second)))
			}
		}
	}
}

// fail ends the run on every rank: the first reason is kept, sent to the other ranks (rank 0
// passes it on to the rest) and handed to OnFailure. The reason goes out before this process
// learns of the failure (Failed, OnFailure): a rank 0 that exited first would close its
// connections unsent, and the other ranks would blame rank 0 instead of the rank that failed
// (seen in CI: rank 2 named rank 0 after rank 1 was killed).
func (c *Coordinator) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		// On every connection at once, each for at most two seconds: a connection stuck
		// behind a hung rank must not hold up the others.
		var wg sync.WaitGroup
		for _, p := range c.peers {
			if p != nil && !p.bye.Load() {
				wg.Go(func() { p.frame(frameAbort, []byte(err.Error()), 2*time.Second) })
			}
		}
		wg.Wait()
		close(c.failed)
		if c.onFailure != nil {
			go c.onFailure(err)
		}
	})
}

// Fail ends the run on every rank because this one failed with err.
func (c *Coordinator) Fail(err error) {
	c.fail(fmt.Errorf("rank %d: %w", c.Rank, err))
}

// Failed is closed when the run fails; Err then says why.
func (c *Coordinator) Failed() <-chan struct{} { return c.failed }

// Err is why the run failed (nil while it has not).
func (c *Coordinator) Err() error {
	select {
	case <-c.failed:
		return c.err
	default:
		return nil
	}
}

// Barrier returns when every rank has called it: the ranks start timed work together, so
// that one rank's later start (a longer compilation) is not counted as the run's time.
func (c *Coordinator) Barrier() error {
	if _, err := c.Gather(nil); err != nil {
		return err
	}
	_, err := c.Broadcast(nil)
	return err
}

// SetLimit bounds every later message by n bytes: what the run needs (its state's bytes),
// so that a corrupt length is refused instead of allocated.
func (c *Coordinator) SetLimit(n int64) { c.limit.Store(max(n, joinLimit)) }

// send sends b to rank r.
func (c *Coordinator) send(r int, b []byte) error {
	if err := c.Err(); err != nil {
		return err
	}
	p := c.link(r)
	if err := p.frame(frameData, b, c.timeout); err != nil {
		if e := c.Err(); e != nil {
			return e
		}
		if connectionEnded(err) {
			// The other end closed. Its reader says why: the reason rank 0 sent before it
			// closed (a relayed link), or the end of file that says the rank ended; a write
			// can fail before the reader has read either.
			select {
			case <-p.gone:
			case <-time.After(time.Second):
			}
			if e := c.Err(); e != nil {
				return e
			}
			c.fail(endedError(p.rank))
			return c.Err()
		}
		c.fail(fmt.Errorf("sending to rank %d: %w", r, err))
		return c.Err() // the first reason, where another came first
	}
	return nil
}

// connectionEnded says a read or write failed because the other end of the connection closed
// or went away.
func connectionEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// endedError is the reason a run fails when rank r's connection ends before the run does.
func endedError(r int) error {
	return fmt.Errorf("rank %d ended without finishing the run (it crashed, was killed, or failed: see its output)", r)
}

// recv waits for rank r's next message, for at most the timeout.
func (c *Coordinator) recv(r int) ([]byte, error) {
	p := c.link(r)
	wait := c.timeout
	if c.Rank != 0 {
		// Rank 0 may itself be waiting for a silent rank: it names that one, and its word
		// comes before this rank would blame rank 0.
		wait *= 2
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case b, ok := <-p.data:
		if ok {
			return b, nil
		}
		if err := c.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("rank %d has left the run", r)
	case <-c.failed:
		return nil, c.err
	case <-timer.C:
		c.fail(fmt.Errorf("rank %d sent no message for %v (hung? --rank-timeout sets how long to wait)", r, wait))
		return nil, c.Err() // the first reason, where another came first
	}
}

// link is the connection that reaches rank r.
func (c *Coordinator) link(r int) *peer {
	if c.Rank != 0 {
		if r != 0 {
			panic(fmt.Sprintf("internal error: rank %d talks to rank %d directly", c.Rank, r))
		}
		return c.peers[0]
	}
	return c.peers[r]
}

// Close leaves the run: the other ranks are told this is no failure. After a failure the
// connections are shut down gently: closing a socket with unread data resets it, and the
// reset could reach a rank before the reason for the failure did.
func (c *Coordinator) Close() error {
	c.doneOnce.Do(func() {
		if c.Err() == nil {
			for _, p := range c.peers {
				if p != nil {
					p.frame(frameBye, nil, time.Second)
				}
			}
		} else {
			wait := make(chan struct{})
			timer := time.AfterFunc(2*time.Second, func() { close(wait) })
			defer timer.Stop()
			for _, p := range c.peers {
				if p == nil {
					continue
				}
				if tc, ok := p.conn.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			for _, p := range c.peers {
				if p == nil {
					continue
				}
				select {
				case <-p.gone:
				case <-wait:
				}
			}
		}
		close(c.done)
		c.closeConns()
	})
	return nil
}

func (c *Coordinator) closeConns() {
	for _, p := range c.peers {
		if p != nil {
			p.conn.Close()
		}
	}
}
