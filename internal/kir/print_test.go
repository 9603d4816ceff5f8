package kir

import (
	"strings"
	"testing"
)

// TestVectorLoads pins how both dialects print a vector load, its lanes and the alignment
// test that guards it, for every element type that has vector loads.
func TestVectorLoads(t *testing.T) {
	kernel := func(ty Type, w int) *Module {
		idx := Add(Mul(Id("row"), Id("n2")), Id("col"))
		return &Module{Uses64: ty == F64, Kernels: []*Kernel{{
			Name:   "k",
			Params: []Param{{Name: "in", Type: ty, Pointer: true, Const: true}, {Name: "out", Type: ty, Pointer: true}, {Name: "n2", Type: I32}},
			Body: []Stmt{
				&Decl{Name: "ok", Type: Bool, Init: and(&Binary{Op: "==", X: Bin("%", Id("n2"), I(w)), Y: I(0)}, &Aligned{Ptr: "in", Bytes: 16})},
				&Decl{Name: "row", Type: I32, Init: I(1)},
				&Decl{Name: "col", Type: I32, Init: I(8)},
				&If{Cond: Id("ok"), Then: []Stmt{
					&VecLoad{Name: "v", T: ty, Width: w, Array: Id("in"), Idx: idx},
					Set(At("out", Id("col")), &Lane{Vec: "v", I: 0}),
					Set(At("out", Add(Id("col"), I(w-1))), &Lane{Vec: "v", I: w - 1}),
				}},
			},
		}}}
	}
	cases := []struct {
		ty         Type
		w          int
		cuda, ocl  string // the load line
		lastLaneCU string
	}{
		{F32, 4, "float4 v = *(const float4*)(in + (row * n2 + col));", "*(__global const float4*)(in + (row * n2 + col));", "out[col + 3] = v.w;"},
		{F32, 2, "float2 v = *(const float2*)(in + (row * n2 + col));", "*(__global const float2*)(in + (row * n2 + col));", "out[col + 1] = v.y;"},
		{F64, 2, "double2 v = *(const double2*)(in + (row * n2 + col));", "*(__global const double2*)(in + (row * n2 + col));", "out[col + 1] = v.y;"},
		{I32, 4, "int4 v = *(const int4*)(in + (row * n2 + col));", "*(__global const int4*)(in + (row * n2 + col));", "out[col + 3] = v.w;"},
		{I64, 2, "longlong2 v = *(const longlong2*)(in + (row * n2 + col));", "*(__global const long2*)(in + (row * n2 + col));", "out[col + 1] = v.y;"},
	}
	for _, c := range cases {
		m := kernel(c.ty, c.w)
		cu, cl := Print(m, CUDA), Print(m, OpenCL)
		for _, want := range []string{c.cuda, c.lastLaneCU, "out[col] = v.x;", "((unsigned long long)in & 15) == 0"} {
			if !strings.Contains(cu, want) {
				t.Errorf("CUDA %v x%d lacks %q:\n%s", c.ty, c.w, want, cu)
			}
		}
		for _, want := range []string{c.ocl, c.lastLaneCU, "((size_t)in & 15) == 0"} {
			if !strings.Contains(cl, want) {
				t.Errorf("OpenCL %v x%d lacks %q:\n%s", c.ty, c.w, want, cl)
			}
		}
	}
	// OpenCL has vectors of four 8-byte elements; CUDA's are 32-byte aligned or missing, and
	// the lowering never asks for them.
	if cl := Print(kernel(F64, 4), OpenCL); !strings.Contains(cl, "double4 v = *(__global const double4*)") {
		t.Errorf("OpenCL double4:\n%s", cl)
	}
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "internal error:") {
			t.Errorf("CUDA double4: got %v, want an internal-error panic", r)
		}
	}()
	Print(kernel(F64, 4), CUDA)
}

func and(x, y Expr) Expr { return &Binary{Op: "&&", X: x, Y: y} }

// TestVectorStoreToBuffer pins a vector store of scalar values into a global buffer: a
// constructed vector in both dialects, __global in OpenCL.
func TestVectorStoreToBuffer(t *testing.T) {
	m := &Module{Kernels: []*Kernel{{
		Name:   "k",
		Params: []Param{{Name: "out", Type: F32, Pointer: true}, {Name: "a", Type: F32}, {Name: "b", Type: F32}},
		Body:   []Stmt{&VecStore{Vals: []Expr{Id("a"), Id("b")}, T: F32, Width: 2, Array: "out", Idx: I(4), Global: true}},
	}}}
	if cu := Print(m, CUDA); !strings.Contains(cu, "*(float2*)(out + 4) = make_float2(a, b);") {
		t.Errorf("CUDA:\n%s", cu)
	}
	if cl := Print(m, OpenCL); !strings.Contains(cl, "*(__global float2*)(out + 4) = (float2)(a, b);") {
		t.Errorf("OpenCL:\n%s", cl)
	}
}
