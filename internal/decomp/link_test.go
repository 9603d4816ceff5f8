package decomp

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawJoin completes a rank's handshake by hand and returns the connection: a process that
// joined and then does whatever the test makes it do.
func rawJoin(t *testing.T, addr string, rank, ranks int, secret, runID string) net.Conn {
	t.Helper()
	var conn net.Conn
	var err error
	for range 100 {
		if conn, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	var ch [56]byte
	if _, err := io.ReadFull(conn, ch[:]); err != nil {
		t.Fatal(err)
	}
	run := sha256.Sum256([]byte(runID))
	hello := make([]byte, 48)
	copy(hello, magic[:])
	binary.LittleEndian.PutUint32(hello[8:], uint32(rank))
	binary.LittleEndian.PutUint32(hello[12:], uint32(ranks))
	copy(hello[16:], run[:])
	hello = append(hello, mac(secret, ch[8:24], hello)...)
	if _, err := conn.Write(hello); err != nil {
		t.Fatal(err)
	}
	if _, reason, err := readFrame(conn, 4096); err != nil || len(reason) > 0 {
		t.Fatalf("rank %d refused: %q %v", rank, reason, err)
	}
	return conn
}

// TestJoinRefusesStrangers has rank 0 wait for its ranks while other connections arrive: a
// silent one, one that sends garbage, one with the wrong secret and one of another run. Each
// is refused with a note, and the run's ranks still join.
func TestJoinRefusesStrangers(t *testing.T) {
	addr := freeAddr(t)
	var mu sync.Mutex
	var notes []string
	opts := func(r int) JoinOptions {
		o := JoinOptions{Timeout: 20 * time.Second, Secret: "s3", RunID: "job-7"}
		if r == 0 {
			o.Log = func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() }
		}
		return o
	}
	var c0 *Coordinator
	var err0 error
	done := make(chan struct{})
	go func() { c0, err0 = Connect(addr, 0, 2, opts(0)); close(done) }()
	dial := func() net.Conn {
		for range 100 {
			if conn, err := net.Dial("tcp", addr); err == nil {
				return conn
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("rank 0 does not listen")
		return nil
	}
	silent := dial() // says nothing, holds its connection open
	defer silent.Close()
	garbage := dial()
	garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("x", 80)))
	defer garbage.Close()
	// The wrong secret and another run's id: real ranks, refused with a reason.
	if _, err := Connect(addr, 1, 2, JoinOptions{Timeout: 5 * time.Second, Secret: "wrong", RunID: "job-7"}); err == nil || !strings.Contains(err.Error(), "secret differs") {
		t.Errorf("wrong secret: %v", err)
	}
	if _, err := Connect(addr, 1, 2, JoinOptions{Timeout: 600 * time.Millisecond, Secret: "s3", RunID: "job-6"}); err == nil || !strings.Contains(err.Error(), "rank 0 of another run") {
		t.Errorf("a rank 0 of another run: %v", err)
	}
	c1, err := Connect(addr, 1, 2, opts(1))
	<-done
	if err != nil || err0 != nil {
		t.Fatalf("the run's ranks: %v, %v", err0, err)
	}
	defer c0.Close()
	defer c1.Close()
	b, err := c0.Broadcast([]byte("plan"))
	if got, err1 := c1.Broadcast(nil); err != nil || err1 != nil || string(got) != string(b) {
		t.Errorf("broadcast after the join: %q %v %v", got, err, err1)
	}
	mu.Lock()
	all := strings.Join(notes, "\n")
	mu.Unlock()
	for _, want := range []string{"not a Tempest rank", "the secret differs"} {
		if !strings.Contains(all, want) {
			t.Errorf("rank 0's notes lack %q:\n%s", want, all)
		}
	}
}

// TestStaleRankZero has a rank 0 of another run at the port: a rank of this run refuses to
// join it and says so.
func TestStaleRankZero(t *testing.T) {
	addr := freeAddr(t)
	go Connect(addr, 0, 2, JoinOptions{Timeout: 3 * time.Second, RunID: "yesterday"})
	_, err := Connect(addr, 1, 2, JoinOptions{Timeout: time.Second, RunID: "today"})
	if err == nil || !strings.Contains(err.Error(), "rank 0 of another run") {
		t.Errorf("joining a stale rank 0: %v", err)
	}
}

// startRanks starts real ranks of a run of n at addr (all but the ones in skip) and returns
// a function that waits for their joins.
func startRanks(t *testing.T, addr string, n int, o JoinOptions, skip ...int) func() []*Coordinator {
	t.Helper()
	cs, errs := make([]*Coordinator, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		if slices.Contains(skip, r) {
			continue
		}
		wg.Go(func() { cs[r], errs[r] = Connect(addr, r, n, o) })
	}
	return func() []*Coordinator {
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		t.Cleanup(func() {
			for _, c := range cs {
				if c != nil {
					c.Close()
				}
			}
		})
		return cs
	}
}

// TestRankFailures has rank 1 of three fail after the join in each way a process can: it
// dies (its connection ends without a goodbye), hangs (its connection stays open and silent),
// or sends a message far larger than the run allows. Ranks 0 and 2 both stop within the
// timeout, naming rank 1, and OnFailure runs on each.
func TestRankFailures(t *testing.T) {
	for _, c := range []struct {
		name, want string
		do         func(conn net.Conn)
	}{
		{"dies", "rank 1 ended without finishing the run", func(conn net.Conn) { conn.Close() }},
		{"hangs", "rank 1 sent no", func(net.Conn) {}},
		{"floods", "at most", func(conn net.Conn) {
			var h [9]byte
			h[0] = frameData
			binary.LittleEndian.PutUint64(h[1:], 1<<40)
			conn.Write(h[:])
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeAddr(t)
			failed := make(chan string, 2)
			o := JoinOptions{Timeout: 1500 * time.Millisecond, OnFailure: func(err error) { failed <- err.Error() }}
			wait := startRanks(t, addr, 3, o, 1)
			conn := rawJoin(t, addr, 1, 3, "", "")
			defer conn.Close()
			cs := wait()
			start := time.Now()
			c.do(conn)
			var wg sync.WaitGroup
			errs := make([]error, 3)
			wg.Go(func() { _, errs[0] = cs[0].Gather([]byte("x")) })
			wg.Go(func() { _, errs[2] = cs[2].Broadcast(nil) })
			wg.Wait()
			for _, r := range []int{0, 2} {
				if errs[r] == nil || !strings.Contains(errs[r].Error(), c.want) {
					t.Errorf("rank %d: %v, want %q", r, errs[r], c.want)
				}
				select {
				case msg := <-failed:
					if !strings.Contains(msg, "rank 1") {
						t.Errorf("OnFailure got %q", msg)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("OnFailure did not run on both ranks")
				}
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("the ranks stopped after %v; the timeout is %v", d, o.Timeout)
			}
		})
	}
}

// TestFailReachesEveryRank has rank 2 fail on its own (an error of its engine): ranks 0 and 1
// stop with its message.
func TestFailReachesEveryRank(t *testing.T) {
	cs := startRanks(t, freeAddr(t), 3, JoinOptions{Timeout: 10 * time.Second})()
	cs[2].Fail(errors.New("the device ran out of memory"))
	if _, err := cs[1].Broadcast(nil); err == nil || !strings.Contains(err.Error(), "rank 2: the device ran out of memory") {
		t.Errorf("rank 1: %v", err)
	}
	if _, err := cs[0].Gather(nil); err == nil || !strings.Contains(err.Error(), "rank 2: the device ran out of memory") {
		t.Errorf("rank 0: %v", err)
	}
}

// TestCloseIsNoFailure has rank 1 finish and leave while rank 0 still works: rank 0 reads
// what rank 1 sent before it left, and nothing fails.
func TestCloseIsNoFailure(t *testing.T) {
	cs := startRanks(t, freeAddr(t), 2, JoinOptions{Timeout: 10 * time.Second})()
	if _, err := cs[1].Gather([]byte("last")); err != nil {
		t.Fatal(err)
	}
	cs[1].Close()
	time.Sleep(300 * time.Millisecond)
	all, err := cs[0].Gather([]byte("mine"))
	if err != nil || string(all[1]) != "last" {
		t.Fatalf("rank 0 gathers %q: %v", all, err)
	}
	if err := cs[0].Err(); err != nil {
		t.Errorf("a rank that left on purpose failed the run: %v", err)
	}
}

func TestLoopbackUnlessHost(t *testing.T) {
	for in, want := range map[string]string{":29500": "127.0.0.1:29500", "0.0.0.0:29500": "0.0.0.0:29500", "host0:1": "host0:1"} {
		if got, err := bindAddr(in); err != nil || got != want {
			t.Errorf("bindAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := bindAddr("29500"); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("bindAddr without a colon: %v", err)
	}
}

// FuzzAdmit feeds rank 0's side of the handshake whatever a connection may send: it never
// panics, never admits a hello without the secret's proof, and answers within its deadline.
func FuzzAdmit(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add(append(magic[:], make([]byte, 72)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, hello []byte) {
		server, client := net.Pipe()
		defer server.Close()
		go func() {
			io.CopyN(io.Discard, client, 56) // the challenge
			client.Write(hello)
			client.Close()
		}()
		r, err := admit(server, sha256.Sum256(nil), 4, "secret", 200*time.Millisecond)
		if err == nil {
			t.Fatalf("admitted rank %d from %q without the secret's proof", r, hello)
		}
	})
}
