package gpu

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestNCCLMissing(t *testing.T) {
	t.Setenv(envLibNCCL, "")
	_, err := loadNCCL([]string{"/nonexistent/libnccl.so.2"})
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "nccl backend: cannot load /nonexistent/libnccl.so.2") || !strings.Contains(err.Error(), envLibNCCL) {
		t.Errorf("loadNCCL of a missing library: %v", err)
	}
}

// TestNCCLOneRank builds a communicator of one rank on a CUDA device and sends a slab of a
// buffer to itself, as a periodic run on one GPU exchanges its halos. It skips without CUDA
// or NCCL (TEMPEST_REQUIRE_NCCL=1 makes a missing NCCL fail).
func TestNCCLOneRank(t *testing.T) {
	openOrSkip(t, "cuda")
	n, err := LoadNCCL()
	if err != nil {
		if errors.Is(err, ErrUnavailable) && os.Getenv("TEMPEST_REQUIRE_NCCL") != "1" {
			t.Skipf("NCCL unavailable: %v", err)
		}
		t.Fatal(err)
	}
	t.Logf("%s", n.Version)
	if v := os.Getenv("NCCL_NVLS_ENABLE"); v == "" {
		t.Error("NCCL_NVLS_ENABLE was left unset")
	}
	testNCCLOneRank(t, n)
}

func testNCCLOneRank(t *testing.T, n *NCCL) {
	d := openOrSkip(t, "cuda")
	id, err := n.UniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.NewComm(d, 1, 0, id)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	b, err := AllocSlice(d, []int32{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	// Elements 0..1 go to 6..7 and 4..5 to 2..3, in one group.
	err = c.Exchange([]P2P{
		{Send: true, Buf: b, Off: 0, Bytes: 8, Peer: 0},
		{Send: false, Buf: b, Off: 24, Bytes: 8, Peer: 0},
		{Send: true, Buf: b, Off: 16, Bytes: 8, Peer: 0},
		{Send: false, Buf: b, Off: 8, Bytes: 8, Peer: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, 8)
	if err := ReadSlice(b, got); err != nil {
		t.Fatal(err)
	}
	if want := "[1 2 5 6 5 6 1 2]"; fmt.Sprint(got) != want {
		t.Errorf("after the self exchange %v, want %s", got, want)
	}
	if err := c.Exchange([]P2P{{Send: true, Buf: b, Off: 30, Bytes: 8, Peer: 0}}); err == nil {
		t.Error("a transfer past the buffer's end was accepted")
	}
	// The same through the communicator's own stream: Start posts, Wait orders stream 0 after
	// it. Elements 2..3 go to 0..1 and 6..7 to 4..5.
	err = c.Start([]P2P{
		{Send: true, Buf: b, Off: 8, Bytes: 8, Peer: 0},
		{Send: false, Buf: b, Off: 0, Bytes: 8, Peer: 0},
		{Send: true, Buf: b, Off: 24, Bytes: 8, Peer: 0},
		{Send: false, Buf: b, Off: 16, Bytes: 8, Peer: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := ReadSlice(b, got); err != nil {
		t.Fatal(err)
	}
	if want := "[5 6 5 6 1 2 1 2]"; fmt.Sprint(got) != want {
		t.Errorf("after the started self exchange %v, want %s", got, want)
	}
	if err := c.Start([]P2P{{Send: true, Buf: b, Off: 30, Bytes: 8, Peer: 0}}); err == nil {
		t.Error("a started transfer past the buffer's end was accepted")
	}
}
