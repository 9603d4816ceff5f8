package model

import (
	"math"
	"strings"
	"testing"

	"tempest/internal/analysis"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.10g, want %.10g", what, got, want)
	}
}

// small is a configuration small enough to count by hand: a 2D star of radius 1, b_T = 2,
// b_S = 8 (compute region 4), h_SN = 5, 10 x 20 interior cells.
func small() AN5DConfig {
	return AN5DConfig{IS: []int{10, 20}, BS: []int{8}, BT: 2, HSN: 5, IT: 2, Rad: 1, Word: 4,
		Shape: analysis.Star, DiagonalFree: true, Associative: true, Ops: ALUOps{FMA: 4, MUL: 1}}
}

func TestAN5DBlockCounts(t *testing.T) {
	if n := NTB([]int{16384}, []int{256}, 4, 1); n != 67 { // ceil(16384 / 248)
		t.Errorf("NTB = %d, want 67", n)
	}
	c := AN5DConfig{IS: []int{16384, 16384}, BS: []int{256}, BT: 4, HSN: 512, Rad: 1}
	if n := NTBPrime(c); n != 32*67 {
		t.Errorf("n'_tb = %d, want 2144", n)
	}
	if n := NThr([]int{32, 16}); n != 512 {
		t.Errorf("NThr = %d", n)
	}
	if n := NTB([]int{100}, []int{8}, 4, 1); n != 0 {
		t.Errorf("a block with no compute region: NTB = %d, want 0", n)
	}
	// 2 sum_{T=0}^{b_T-1} rad (b_T - T): b_T=4, rad=1: 2 (4+3+2+1) = 20; b_T=2, rad=2: 2 (4+2) = 12.
	if n := RedundantPlanes(4, 1); n != 20 {
		t.Errorf("RedundantPlanes(4,1) = %d", n)
	}
	if n := RedundantPlanes(2, 2); n != 12 {
		t.Errorf("RedundantPlanes(2,2) = %d", n)
	}
	if n := StreamBlocks(512, 0); n != 1 {
		t.Error(n)
	}
}

func TestAN5DTables(t *testing.T) {
	cases := []struct {
		dims      int
		shape     analysis.Shape
		rad       int
		practical bool
		want      int
	}{
		{2, analysis.Star, 2, true, 4},   // 2 rad
		{2, analysis.Box, 1, true, 2},    // (2 rad + 1) - 1
		{2, analysis.Box, 1, false, 6},   // (2 rad + 1)^2 - (2 rad + 1)
		{3, analysis.Star, 3, true, 12},  // 4 rad
		{3, analysis.Box, 1, true, 8},    // (2 rad + 1)^2 - 1
		{3, analysis.Box, 2, false, 120}, // 125 - 5
	}
	for _, c := range cases {
		if got := SharedReads(c.dims, c.shape, c.rad, c.practical); got != c.want {
			t.Errorf("SharedReads(%dD %s r=%d practical=%v) = %d, want %d", c.dims, c.shape, c.rad, c.practical, got, c.want)
		}
	}
	if n := SharedFootprint(256, 4, 1, true, false); n != 2048 {
		t.Errorf("footprint (diagonal-free) = %d", n)
	}
	if n := SharedFootprint(256, 8, 2, false, false); n != 2*256*5*8 {
		t.Errorf("footprint (otherwise) = %d", n)
	}
	if n := SharedWrites(false, false, 2); n != 5 {
		t.Errorf("writes = %d", n)
	}
	// b_T (2 rad + 1) + b_T + 20 and 2 b_T (2 rad + 1) + b_T + 30.
	if n := MinRegisters(4, 1, 4); n != 36 {
		t.Errorf("float registers = %d, want 36", n)
	}
	if n := MinRegisters(4, 1, 8); n != 58 {
		t.Errorf("double registers = %d, want 58", n)
	}
	if RegistersFit(16, 4, 8, 256) { // 2*16*9 + 16 + 30 = 334 > 255
		t.Error("334 registers cannot fit")
	}
	if !RegistersFit(4, 1, 4, 512) {
		t.Error("36 x 512 registers fit")
	}
	if n := len(AN5DSpace(2)); n != 144 {
		t.Errorf("2D space %d, want 144", n)
	}
	if n := len(AN5DSpace(3)); n != 64 {
		t.Errorf("3D space %d, want 64", n)
	}
}

func TestAN5DEfficiencies(t *testing.T) {
	// (2 FMA + MUL + ADD + OTHER) / (2 (FMA + MUL + ADD + OTHER)): (8 + 2) / 12.
	near(t, "effALU", EffALU(ALUOps{FMA: 4, MUL: 2}), 10.0/12)
	near(t, "effALU all FMA", EffALU(ALUOps{FMA: 3}), 1)
	near(t, "effALU all ADD", EffALU(ALUOps{ADD: 3}), 0.5)
	// 300 blocks, 10 SMs x 8 blocks: 3.75 waves -> 3.75 / 4.
	near(t, "effSM", EffSM(300, 10, 2048/256), 0.9375)
	near(t, "effSM whole waves", EffSM(160, 10, 8), 1)
	if n := AN5DBlocksPerSM(256, 2048, 2048, 65536); n != 8 {
		t.Errorf("blocks per SM = %d", n)
	}
	if n := AN5DBlocksPerSM(128, 2*128*9*8, 2048, 49152); n != 2 { // shared-limited: 49152 / 18432
		t.Errorf("blocks per SM = %d", n)
	}
}

// TestAN5DThreadCounts checks section 5's thread counts against a hand count.
//
// In-plane axis (20 cells, compute region 4, 5 blocks of 8 threads), block k covers
// [4k - h, 4k + 4 + h) with h = (b_T - T) rad:
//
//	T=0 (h=2): in [0,20): 6+8+8+8+6 = 36; in [-1,21): 7+8+8+8+7 = 38; all: 40
//	T=1 (h=1): 5+6+6+6+5 = 28; 6+6+6+6+6 = 30
//	T=2 (h=0): 20; 20
//
// Streaming axis (10 planes, h_SN = 5, 2 stream blocks), [5k - h, 5k + 5 + h):
//
//	T=0: 7+7 = 14 (= 10 + 2 rad b_T); with boundary 8+8 = 16
//	T=1: 6+6 = 12; 7+7 = 14
//	T=2: 10; 10
func TestAN5DThreadCounts(t *testing.T) {
	tc := CountThreads(small())
	want := ThreadCounts{
		Valid:      20 * 10,
		Redundant:  36*14 - 200,
		Boundary:   38*16 - 36*14,
		OutOfBound: 40*16 - 38*16,
		Comp:       28*12 + 20*10, // T = 1, 2
		SMRead:     30*14 + 20*10,
		SMWrite:    40*16 + 40*14, // T = 0, 1: every thread, out-of-bound ones included
		GMRead:     38 * 16,
		GMWrite:    200,
	}
	if tc != want {
		t.Errorf("counts\n got  %+v\n want %+v", tc, want)
	}
	tr := Traffic(small(), tc)
	// Star 2D: 2 rad = 2 reads, 1 write per thread; 4-byte words; 2*4 + 1 = 9 FLOPs per cell.
	near(t, "global bytes", tr.GlobalBytes, float64(608+200)*4)
	near(t, "shared bytes", tr.SharedBytes, float64(620*2+1200)*4)
	near(t, "FLOPs", tr.FLOPs, 536*9)
}

func TestAN5DKernelTime(t *testing.T) {
	pk := AN5DPeaks{Compute: 1e12, Shared: 1e11, Global: 1e10, SMs: 2, MaxThreadsPerSM: 2048, SharedPerSM: 65536}
	kt := KernelTime(small(), pk)
	near(t, "effALU", kt.EffALU, 0.9)
	near(t, "time_comp", kt.Comp, 4824/(1e12*0.9))
	near(t, "time_sm", kt.SM, 9760/1e11)
	near(t, "time_gm", kt.GM, 3232/1e10)
	// 8 threads per block: min(2048/8, 65536/64) = 256 per SM; 10 blocks over 2 x 256 slots.
	near(t, "effSM", kt.EffSM, 10.0/512)
	near(t, "time_model", kt.Model, (3232/1e10)/(10.0/512))
	if kt.Bottleneck != Latency {
		t.Errorf("bottleneck %s, want %s (one wave 2%% full)", kt.Bottleneck, Latency)
	}
	// Three steps with b_T = 2: one call of 2 steps and one of 1.
	c := small()
	c.IT = 3
	total, _ := AN5DPredict(c, pk)
	one := c
	one.BT = 1
	near(t, "run", total, kt.Model+KernelTime(one, pk).Model)
}

func TestInPlaneEquations(t *testing.T) {
	d := InPlaneDevice{SM: 2, BW: 2e9, Smem: 49152, Reg: 65536, BlkSM: 8, WarpSM: 48, Lat: 400, Clock: 1e9}
	k := InPlaneKernel{LX: 64, LY: 64, TX: 16, TY: 4, RX: 1, RY: 2, KR: 2048, KS: 4096, Ops: 10, BytesBlk: 1000}
	r := InPlane(k, d)
	// (6) 4096 / (16*1*4*2) = 32; warps per block 2; (7) min(8, 32, 12, 24) = 8;
	// (8) ceil(32 / 16) = 2; (9) ceil((32 - 16) / 2) = 8.
	if r.Blks != 32 || r.WarpBlk != 2 || r.ActBlks != 8 || r.Stages != 2 || r.RemBlks != 8 {
		t.Fatalf("%+v", r)
	}
	tm := 400/1e9 + 1000/(2e9/2)
	tc := 8 * 10 * 2 * 2 / 1e9
	f := 8 - 7*15.0/47 // 16 warps of 48
	ts := f*tm + 8*tc
	near(t, "Tm", r.Tm, tm)
	near(t, "Tc", r.Tc, tc)
	near(t, "Ts", r.Ts, ts)
	near(t, "Tl", r.Tl, ts)
	near(t, "Perf", r.Perf, 4096/(2*ts))
	near(t, "f(1)", hide(1, 2, 48), 1)
	near(t, "f(full)", hide(24, 2, 48), 1)
}

// TestAN5DModelBesideN5D: the paper's model stays available beside the calibrated one and
// still predicts an n5d plan (its times are far more optimistic).
func TestAN5DModelBesideN5D(t *testing.T) {
	p, s := prog(t, "j2d5pt")
	in := Input{Prog: p, Plan: mustParse(t, "n5d:bt=8", p), Shape: []int{16386, 16386}, Steps: 1000, Dev: h100Probed()}
	paper, err := AN5DModel.Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Sum = s
	ours, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	if !(paper.Seconds > 0) || !(ours.Seconds > paper.Seconds) || !strings.HasPrefix(ours.Model, "n5d: Tempest") {
		t.Errorf("AN5D %.3g s, calibrated %.3g s (%s)", paper.Seconds, ours.Seconds, ours.Model)
	}
}
