package aah

import (
	"strconv"
	"strings"
)

// The parser's walk over a decoded document: each value it visits is a
// node, which knows the path that led to it ("a.b[2].c") for the problems
// it may report.

// node is a value in the decoded document and the path that leads to it.
// The path is kept as a step in the parse's pathSteps, made into a string
// ("a.b[2].c") only for a problem: a valid document, the usual one, builds
// none (building every node's path was a tenth of intake's allocations).
type node struct {
	paths *pathSteps
	at    int32 // this node's step in paths; -1: the document itself
	v     any
}

// pathStep is one step of a node's path: a member name (index -1; the name
// may be "", a key like any other), or an array index; parent is the step
// before it (-1: none).
type pathStep struct {
	parent int32
	index  int32
	name   string
}

// pathSteps holds the steps of every node of one parse.
type pathSteps []pathStep

func (n node) child(name string, index int, v any) node {
	*n.paths = append(*n.paths, pathStep{parent: n.at, index: int32(index), name: name})
	return node{paths: n.paths, at: int32(len(*n.paths) - 1), v: v}
}

func (n node) field(name string) node {
	m, _ := n.v.(map[string]any)
	return n.child(name, -1, m[name])
}

func (n node) index(i int) node {
	a, _ := n.v.([]any)
	return n.child("", i, a[i])
}

// path is the node's path in the form "a.b[2].c"; "" for the document.
func (n node) path() string {
	if n.at < 0 {
		return ""
	}
	var steps []pathStep
	for at := n.at; at >= 0; at = (*n.paths)[at].parent {
		steps = append(steps, (*n.paths)[at])
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		switch st := steps[i]; {
		case st.index >= 0:
			b.WriteString("[" + strconv.Itoa(int(st.index)) + "]")
		case b.Len() > 0:
			b.WriteString("." + st.name)
		default:
			b.WriteString(st.name)
		}
	}
	return b.String()
}

func (n node) absent() bool { return n.v == nil }
