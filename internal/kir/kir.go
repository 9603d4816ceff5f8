// Package kir is Tempest's kernel IR: a small C-like AST that strategies build and two printers
// (CUDA, OpenCL) render. The printers differ only in qualifiers, index builtins, barriers and
// math names; every decision about the computation is made before a kernel reaches them.
package kir

import "tempest/internal/ir"

// Type is a scalar type of kernel code.
type Type int

const (
	Void Type = iota
	Bool
	I32
	I64
	F32
	F64
	// U32 is an unsigned 32-bit integer: the chained launches' completion flags (CUDA only).
	U32
)

// FromIR maps an element type.
func FromIR(t ir.Type) Type {
	switch t {
	case ir.Bool:
		return Bool
	case ir.I32:
		return I32
	case ir.I64:
		return I64
	case ir.F32:
		return F32
	case ir.F64:
		return F64
	}
	panic("internal error: kir type of " + t.String())
}

// IsFloat reports whether t is f32 or f64.
func (t Type) IsFloat() bool { return t == F32 || t == F64 }

// Space is where an array lives.
type Space int

const (
	Global Space = iota
	Shared
	Local // a per-thread array (registers when indices are constant)
)

// Kernel is one __global__ / __kernel function.
type Kernel struct {
	Name   string
	Params []Param
	Body   []Stmt
	// DynShared is the element type of the dynamic shared-memory array `smem` the body uses
	// (Void: none). CUDA declares it extern; OpenCL receives it as the last parameter.
	DynShared Type
	// MaxThreads, when positive, is the block size the kernel is launched with: CUDA gets
	// __launch_bounds__, so that the compiler keeps the registers within what such a block
	// may use (spilling if it must) rather than build a kernel that cannot launch.
	MaxThreads int
	// Chained says the kernel runs as a programmatic dependent launch after a launch of itself
	// (ChainWait, ChainSignal): its input buffers are written while it runs, so the CUDA printer
	// gives its read-only pointer parameters no __restrict__. Their reads then stay plain
	// coherent loads (the wait's acquire orders them after the writes), not the read-only data
	// path, which assumes the data unchanged for the kernel's lifetime. Explicit L2 loads
	// (__ldcg) would do too, but the compiler schedules them apart, which costs.
	Chained bool
}

// Param is a kernel parameter: a pointer to global memory or a scalar.
type Param struct {
	Name    string
	Type    Type
	Pointer bool
	Const   bool // read-only pointer
}

// Module is the kernels of one compilation unit plus the precision they need.
type Module struct {
	Kernels []*Kernel
	Uses64  bool // double precision: OpenCL needs cl_khr_fp64
	// Exact asks for IEEE operations as written: no contraction of a*b+c into an FMA. The
	// OpenCL printer says so with a pragma; CUDA compilations of such a module pass
	// --fmad=false (the runner's business, as options are not source).
	Exact bool
}

// Stmt is a statement.
type Stmt interface{ stmt() }

type (
	// Decl declares a local variable, optionally initialised.
	Decl struct {
		Name string
		Type Type
		Init Expr
		// Const declares a constant: an integer one initialised by a literal is then a
		// constant expression to the compiler's front end, which folds it before anything else
		// runs (plan.ConstSize's sizes).
		Const bool
		// Pointer declares a restrict pointer to Type (C for the host only), to const data
		// with Const: the row of a grid or scratch buffer that a loop reads or writes.
		Pointer bool
	}
	// ArrayDecl declares a fixed-size array in shared or local memory. Align, when positive,
	// is the array's alignment in bytes: what a VecStore into it needs.
	ArrayDecl struct {
		Name  string
		Type  Type
		Space Space
		Len   int
		Align int
	}
	// Assign stores into a variable or array element.
	Assign struct {
		LHS Expr
		RHS Expr
	}
	// If is a conditional statement.
	If struct {
		Cond Expr
		Then []Stmt
		Else []Stmt
	}
	// For is `for (int Var = From; Var < To; Var += Step)`.
	For struct {
		Var      string
		From, To Expr
		Step     int
		Unroll   bool
		Body     []Stmt
	}
	// Barrier synchronises the threads of a block (and makes shared memory consistent).
	Barrier struct{}
	// Return leaves the kernel.
	Return struct{}
	// Comment is printed as a line comment.
	Comment struct{ Text string }
	// Block is a nested scope.
	Block struct{ Body []Stmt }
	// VecLoad declares Name, a vector of Width (2 or 4) elements of type T, holding
	// Array[Idx], ..., Array[Idx+Width-1] read with one vector access, so that a thread issues
	// one load instruction instead of Width. The printers cast the element pointer to a vector
	// pointer, which promises the compiler that &Array[Idx] is aligned to Width*size(T) bytes:
	// the strategy that emits it must have established that (at run time if need be), or the
	// load faults (CUDA) or is undefined (OpenCL). Lane reads the components.
	VecLoad struct {
		Name  string
		T     Type
		Width int
		Array Expr
		Idx   Expr
		// Shared says Array is the shared array (OpenCL needs its address space).
		Shared bool
	}
	// VecStore writes the vector variable Vec (declared by a VecLoad of the same T and Width),
	// or the vector of the Width scalars Vals when they are given, to Array[Idx], ...,
	// Array[Idx+Width-1] with one vector access: of a shared array, or of a global buffer
	// (a pointer parameter) when Global is set. As for VecLoad, &Array[Idx] must be aligned to
	// Width*size(T) bytes: a shared array is declared with that Align and Idx is a multiple of
	// Width; for a buffer the strategy establishes it, at run time if need be.
	VecStore struct {
		Vec    string
		Vals   []Expr
		T      Type
		Width  int
		Array  string
		Idx    Expr
		Global bool
	}
)

// Asynchronous copies (CUDA's cp.async, compute capability 8.0 and later): a thread copies
// global memory into shared memory without passing it through registers, groups its copies,
// and later waits for all but its newest groups. Only the copying thread may rely on the wait
// (others need a barrier after it). Only CUDA has them: plans that need them are refused for
// OpenCL (plan.Limits.NoAsync); the OpenCL printer renders their synchronous equivalent, for
// tests.
type (
	// SharedBase declares Name, the 32-bit shared-window address of element Idx of the
	// dynamic shared array smem: what AsyncCopy addresses its destination from. Declared once
	// ahead of a loop, it is the one register the copies' destinations need (a generic
	// pointer per destination would be two each, kept live across the loop).
	SharedBase struct {
		Name string
		Idx  Expr
	}
	// AsyncCopy starts copying Width consecutive elements of type T from global buffer Src
	// (a pointer parameter) at SrcIdx, an index of type IdxType (I32 or I64), to shared memory
	// at element DstIdx past the address DstBase (a SharedBase of an array of T). Width times
	// the element size must be 4, 8 or 16 bytes, and both addresses aligned to it: for the
	// shared side the strategy lays its planes out so; for the buffer it establishes it, at
	// run time if need be.
	AsyncCopy struct {
		T       Type
		Width   int
		Src     string
		SrcIdx  Expr
		IdxType Type
		DstBase string
		DstIdx  Expr
	}
	// AsyncCommit closes the thread's copies started since the last commit into a group.
	AsyncCommit struct{}
	// AsyncWait waits until at most Pending of the thread's committed groups are still in
	// flight (the older ones have landed and are visible to the thread).
	AsyncWait struct{ Pending int }
)

// Chained launches (CUDA sm_90's programmatic dependent launch): a launch of a Chained kernel
// may start while the launch of it before is still running; each block waits only for the
// blocks of that launch whose outputs it reads or whose inputs it overwrites.
type (
	// ChainWait lets the next launch start (griddepcontrol.launch_dependents), then, when Wait
	// (a U32) is not zero, has one thread wait until the flag of every block of the launch
	// before from Pos[i] - Reach[i] to Pos[i] + Reach[i] (1 by default) along each launch axis i inside Dims (the
	// launch's blocks per axis) reaches Wait (ld.acquire.gpu), and synchronises the block. Flags
	// is the U32 buffer of one flag per block position, x fastest. Every thread runs it.
	ChainWait struct {
		Flags string
		Wait  Expr
		Pos   []Expr
		Dims  []Expr
		// Reach, when given, widens the neighbourhood along axis i to Pos[i] +- Reach[i].
		Reach []int
	}
	// ChainSignal, the kernel's last statement, synchronises the block and has one thread set
	// the block's flag at Pos to Epoch (a fence, then st.release.gpu): its outputs are written
	// and its inputs read. Every thread runs it.
	ChainSignal struct {
		Flags string
		Epoch Expr
		Pos   []Expr
		Dims  []Expr
	}
)

func (*ChainWait) stmt()   {}
func (*ChainSignal) stmt() {}

func (*SharedBase) stmt()  {}
func (*AsyncCopy) stmt()   {}
func (*AsyncCommit) stmt() {}
func (*AsyncWait) stmt()   {}

func (*Decl) stmt()      {}
func (*ArrayDecl) stmt() {}
func (*Assign) stmt()    {}
func (*If) stmt()        {}
func (*For) stmt()       {}
func (*Barrier) stmt()   {}
func (*Return) stmt()    {}
func (*Comment) stmt()   {}
func (*Block) stmt()     {}
func (*VecLoad) stmt()   {}
func (*VecStore) stmt()  {}

// Expr is an expression.
type Expr interface{ expr() }

// Dim is a thread-index builtin.
type Dim int

const (
	ThreadIdx Dim = iota
	BlockIdx
	BlockDim
	GridDim
)

type (
	// Ident names a variable or parameter.
	Ident struct{ Name string }
	// Int is an integer literal of type T (I32 or I64).
	Int struct {
		V int64
		T Type
	}
	// Float is a float literal of type T.
	Float struct {
		V float64
		T Type
	}
	// BoolLit is true or false.
	BoolLit struct{ V bool }
	// Unary is -X or !X.
	Unary struct {
		Op string
		X  Expr
	}
	// Binary is X op Y in C semantics.
	Binary struct {
		Op   string
		X, Y Expr
	}
	// Cond is C ? A : B.
	Cond struct{ C, A, B Expr }
	// Call is a math function; the printers pick the name for type T.
	Call struct {
		Fn   string
		T    Type
		Args []Expr
	}
	// Cast converts X from type From to T with the IR's rules (float to int truncates and
	// saturates, NaN gives 0; wider to narrower integers wrap).
	Cast struct {
		T, From Type
		X       Expr
	}
	// Index is Array[Idx].
	Index struct {
		Array Expr
		Idx   Expr
	}
	// Builtin is threadIdx.x and friends; Axis is 0 (x), 1 (y) or 2 (z).
	Builtin struct {
		D    Dim
		Axis int
	}
	// Lane is component I (0 = .x .. 3 = .w) of the vector variable Vec declared by a VecLoad.
	Lane struct {
		Vec string
		I   int
	}
	// Aligned is true when the address held by pointer parameter Ptr is a multiple of Bytes (a
	// power of two): the run-time test that lets a kernel take a VecLoad path only where the
	// buffer it reads is aligned, whatever the allocator gave.
	Aligned struct {
		Ptr   string
		Bytes int
	}
)

func (*Ident) expr()   {}
func (*Int) expr()     {}
func (*Float) expr()   {}
func (*BoolLit) expr() {}
func (*Unary) expr()   {}
func (*Binary) expr()  {}
func (*Cond) expr()    {}
func (*Call) expr()    {}
func (*Cast) expr()    {}
func (*Index) expr()   {}
func (*Builtin) expr() {}
func (*Lane) expr()    {}
func (*Aligned) expr() {}

// Helpers that keep strategy code short.

// Id is an identifier expression.
func Id(name string) Expr { return &Ident{Name: name} }

// I is an int literal.
func I(v int) Expr { return &Int{V: int64(v), T: I32} }

// Bin builds X op Y, folding integer literals so printed indices stay readable.
func Bin(op string, x, y Expr) Expr {
	xi, xok := x.(*Int)
	yi, yok := y.(*Int)
	if xok && yok && xi.T == I32 && yi.T == I32 {
		switch op {
		case "+":
			return I(int(xi.V + yi.V))
		case "-":
			return I(int(xi.V - yi.V))
		case "*":
			return I(int(xi.V * yi.V))
		}
	}
	if yok && yi.V < 0 && yi.T == I32 && (op == "+" || op == "-") {
		flip := map[string]string{"+": "-", "-": "+"}[op]
		return &Binary{Op: flip, X: x, Y: I(int(-yi.V))}
	}
	if yok && yi.V == 0 && (op == "+" || op == "-") {
		return x
	}
	if xok && xi.V == 0 && op == "+" {
		return y
	}
	if yok && yi.V == 1 && (op == "*" || op == "/") {
		return x
	}
	if xok && xi.V == 1 && op == "*" {
		return y
	}
	if (xok && xi.V == 0 || yok && yi.V == 0) && op == "*" {
		return I(0)
	}
	return &Binary{Op: op, X: x, Y: y}
}

// Add is x + y.
func Add(x, y Expr) Expr { return Bin("+", x, y) }

// Mul is x * y.
func Mul(x, y Expr) Expr { return Bin("*", x, y) }

// Min is the smaller of two 32-bit integers (index arithmetic: chunk bounds, clamps).
func Min(x, y Expr) Expr { return &Call{Fn: "min", T: I32, Args: []Expr{x, y}} }

// Max is the larger of two 32-bit integers.
func Max(x, y Expr) Expr { return &Call{Fn: "max", T: I32, Args: []Expr{x, y}} }

// Set is an assignment statement.
func Set(lhs, rhs Expr) Stmt { return &Assign{LHS: lhs, RHS: rhs} }

// At is array[idx].
func At(array string, idx Expr) Expr { return &Index{Array: Id(array), Idx: idx} }
