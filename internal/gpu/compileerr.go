package gpu

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// CompileError is a failed kernel compilation: the compiler's log plus the
// source lines around every line the log mentions.
type CompileError struct {
	Backend string // "cuda" or "opencl"
	Name    string // the name given to Compile
	Target  string // e.g. "sm_90" or the OpenCL device name
	Status  string // NVRTC_ERROR_COMPILATION, CL_BUILD_PROGRAM_FAILURE, ...
	Log     string
	Source  string
	Lines   []int // source lines (1-based) mentioned by the log, ascending
}

// contextLines is how many source lines are shown on each side of a line the
// log mentions.
const contextLines = 3

// maxExcerpts bounds how many distinct places are quoted.
const maxExcerpts = 8

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: compiling %s", e.Backend, e.Name)
	if e.Target != "" {
		fmt.Fprintf(&b, " for %s", e.Target)
	}
	fmt.Fprintf(&b, " failed (%s)", e.Status)
	if log := strings.TrimRight(e.Log, "\n\x00 "); log != "" {
		b.WriteString(":\n")
		b.WriteString(log)
	}
	if ex := sourceExcerpts(e.Source, e.Lines); ex != "" {
		b.WriteString("\n")
		b.WriteString(ex)
	}
	return b.String()
}

// logLineRE finds source positions in compiler logs:
//
//	NVRTC:          name.cu(12): error: ...
//	clang, NVIDIA:  <source>:12:5: error: ...     input.cl:12:5: warning: ...
//	PoCL:           error: /tmp/.../tempfile.cl:12:5: use of undeclared ...
//	others:         file.cl:12: error: ...
var logLineRE = regexp.MustCompile(`\((\d+)\)\s*:|[\w\-.>/]:(\d+):\d+:|:(\d+):\s*(?:error|warning|note|fatal error)`)

// logLines returns the distinct source line numbers a log mentions, in order.
func logLines(log string, nsrc int) []int {
	seen := map[int]bool{}
	var out []int
	for _, m := range logLineRE.FindAllStringSubmatch(log, -1) {
		s := m[1] + m[2] + m[3] // exactly one group matched
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || (nsrc > 0 && n > nsrc) || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// sourceExcerpts numbers the source lines around each of lines, merging
// overlapping windows and marking the mentioned lines with '>'.
func sourceExcerpts(src string, lines []int) string {
	if src == "" || len(lines) == 0 {
		return ""
	}
	text := strings.Split(strings.TrimRight(src, "\n"), "\n")
	if len(lines) > maxExcerpts {
		lines = lines[:maxExcerpts]
	}
	mark := map[int]bool{}
	for _, l := range lines {
		mark[l] = true
	}
	width := len(strconv.Itoa(len(text)))
	var b strings.Builder
	b.WriteString("source:")
	last := 0 // last line printed
	for _, l := range lines {
		lo := max(1, l-contextLines)
		hi := min(len(text), l+contextLines)
		if lo <= last {
			lo = last + 1
		} else if last > 0 {
			b.WriteString("\n  ...")
		}
		for i := lo; i <= hi; i++ {
			m := " "
			if mark[i] {
				m = ">"
			}
			fmt.Fprintf(&b, "\n%s %*d | %s", m, width, i, text[i-1])
		}
		if hi > last {
			last = hi
		}
	}
	return b.String()
}

func newCompileError(backend, name, target, status, log, src string) *CompileError {
	log = strings.TrimRight(log, "\x00")
	return &CompileError{
		Backend: backend, Name: name, Target: target, Status: status,
		Log: log, Source: src, Lines: logLines(log, strings.Count(src, "\n")+1),
	}
}

// defineFlags turns Defines into sorted -DNAME=VALUE flags.
func defineFlags(defs map[string]string) []string {
	keys := make([]string, 0, len(defs))
	for k := range defs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if v := defs[k]; v != "" {
			out = append(out, "-D"+k+"="+v)
		} else {
			out = append(out, "-D"+k)
		}
	}
	return out
}
