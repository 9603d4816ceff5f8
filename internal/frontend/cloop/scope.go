package cloop

import "tempest/internal/frontend/cc"

// visibleAt marks the tokens outside the scop region whose declarations are in scope where the
// region begins (byte offset at), following C's block scoping: file-scope declarations and
// those of the blocks still open at the region, including the parameters of the function that
// holds it and the header of a for loop whose body it is. Everything else is not in scope:
// declarations after the region, and those of blocks, functions and loops closed before it.
// AN5D's benchmark drivers hold the same loop nest a second time, with the same loop variables
// declared in their for headers, in an else branch after the region; that loop must not lend
// the region its variables.
//
// Braces open and close blocks. A parenthesised group opened right after for, or after a name
// (a function's parameters, a call, an if or while condition) is a header: its declarations
// belong to the block that follows it, or to the region when the region follows it directly,
// and to nothing otherwise. Other parentheses (casts, grouping, (*A) declarators) do not
// scope.
func visibleAt(toks []cc.Token, at int) []bool {
	type frame struct {
		header bool
		open   bool
		alias  *frame // a header's declarations live as long as this block
	}
	root := &frame{open: true}
	stack := []*frame{root}
	owner := make([]*frame, len(toks))
	var headers []*frame // open header groups, innermost last, and which paren depth opened them
	var depths []int
	paren := 0
	var pendingHeader *frame // a header just closed, waiting to see whether a block follows
	region := len(toks)
	for i, tk := range toks {
		if tk.Off >= at {
			region = i
			break
		}
	}
	for i := 0; i < region; i++ {
		tk := toks[i]
		if pendingHeader != nil {
			if tk.Kind == cc.Punct && tk.Text == "{" {
				b := &frame{open: true}
				pendingHeader.alias = b
				pendingHeader = nil
				stack = append(stack, b)
				owner[i] = b
				continue
			}
			pendingHeader.open = false
			pendingHeader = nil
		}
		owner[i] = stack[len(stack)-1]
		if tk.Kind != cc.Punct {
			continue
		}
		switch tk.Text {
		case "{":
			b := &frame{open: true}
			stack = append(stack, b)
		case "}":
			if len(stack) > 1 {
				stack[len(stack)-1].open = false
				stack = stack[:len(stack)-1]
			}
		case "(":
			paren++
			if i > 0 && toks[i-1].Kind == cc.Ident && !isTypeName(toks[i-1].Text) {
				h := &frame{header: true, open: true}
				headers = append(headers, h)
				depths = append(depths, paren)
				stack = append(stack, h)
			}
		case ")":
			if n := len(headers); n > 0 && depths[n-1] == paren && stack[len(stack)-1] == headers[n-1] {
				h := headers[n-1]
				headers, depths = headers[:n-1], depths[:n-1]
				stack = stack[:len(stack)-1]
				if i+1 < region {
					pendingHeader = h
				}
				// else the region follows the header directly: the header stays open.
			}
			paren--
		}
	}
	vis := make([]bool, len(toks))
	for i := 0; i < region; i++ {
		f := owner[i]
		for f.alias != nil {
			f = f.alias
		}
		vis[i] = f.open
	}
	return vis
}

// isTypeName reports whether a name is a C type word, before which a parenthesis starts a
// declarator such as float (*A)[N] rather than a header.
func isTypeName(s string) bool {
	switch s {
	case "float", "double", "int", "long", "short", "char", "signed", "unsigned", "const", "static",
		"register", "volatile", "int32_t", "int64_t", "void", "bool", "size_t", ElemMacro:
		return true
	}
	return false
}

// loopVars returns the variables the region's for loops assign in their headers
// (for (t = 0; ...) or for (int i = R; ...)): they are not the constants of the same names that
// code outside the region may define.
func loopVars(toks []cc.Token) map[string]bool {
	vars := map[string]bool{}
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].Kind != cc.Ident || toks[i].Text != "for" || toks[i+1].Text != "(" {
			continue
		}
		k := i + 2
		for k < len(toks) && toks[k].Kind == cc.Ident && isTypeName(toks[k].Text) {
			k++
		}
		if k+1 < len(toks) && toks[k].Kind == cc.Ident && toks[k+1].Text == "=" {
			vars[toks[k].Text] = true
		}
	}
	return vars
}
