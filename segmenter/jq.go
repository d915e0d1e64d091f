package segmenter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
)

// jq zones.
//
// A watch of a JSON document may also restrict itself with a jq program
// (github.com/itchyny/gojq), written as a zone that starts with "jq:":
// "jq:.items[] | {name, price}". The program runs on the decoded
// document; its output is what is read as the page (several outputs as
// an array of them, none as an empty page; one object with a name is
// headed by it, as the objects of an array are). Objects the program
// builds have their keys in alphabetical order (jq's objects keep no
// order).
//
// A program is bounded: it runs under a time limit (Segmenter.JQTimeout,
// DefaultJQTimeout), at most JQMaxOutputs outputs are read, and the
// outputs together may hold at most jqMaxBytes bytes of keys and values;
// "+" and "*" make no string longer than 16 MiB, "+" and setting a path
// no array longer than 1,048,576 values.
// Past a bound the check fails with an error naming the zone; nothing is
// compared.

// JQPrefix starts a zone that is a jq program.
const JQPrefix = "jq:"

// Bounds of a jq zone's run.
const (
	// DefaultJQTimeout is the time a jq program may run on one document.
	// Real programs over real API answers take milliseconds.
	DefaultJQTimeout = time.Second
	// JQMaxOutputs is the number of outputs of a jq program read.
	JQMaxOutputs = 10000
	// jqMaxLen bounds the program's text.
	jqMaxLen = 1024
)

// jqMaxBytes bounds the size of a program's outputs over a document of
// size bytes: four times the document, at least 1 MiB.
func jqMaxBytes(size int) int { return max(4*size, 1<<20) }

// isJQZone reports whether zone is a jq program.
func isJQZone(zone string) bool { return strings.HasPrefix(zone, JQPrefix) }

// parseJQ compiles a zone that is a jq program; an invalid one is an
// EINVALID error wrapping ErrZone, naming the zone.
func parseJQ(zone string) (*gojq.Code, error) {
	src := strings.TrimSpace(strings.TrimPrefix(zone, JQPrefix))
	if src == "" {
		return nil, inputErrorf(ErrZone, "invalid jq zone %q: the program after %q is empty", zone, JQPrefix)
	}
	if len(src) > jqMaxLen {
		return nil, inputErrorf(ErrZone, "invalid jq zone: the program is longer than %d bytes", jqMaxLen)
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, inputErrorf(ErrZone, "invalid jq zone %q: %s", zone, jqErrorText(err, src))
	}
	// No environment ($ENV is empty), modules or input: the program
	// sees the document and nothing of the service. Its "+" and "*"
	// are bounded (boundOperators), and so are the array indexes it
	// sets (boundAssignments).
	boundAssignments(reflect.ValueOf(q))
	prelude, err := gojq.Parse(jqPrelude)
	if err != nil {
		panic(err)
	}
	q.FuncDefs = append(prelude.FuncDefs, q.FuncDefs...)
	boundOperators(reflect.ValueOf(q))
	code, err := gojq.Compile(q, gojq.WithFunction(jqAddFunc, 2, 2, jqAdd), gojq.WithFunction(jqMulFunc, 2, 2, jqMultiply),
		gojq.WithFunction(jqSetpathFunc, 2, 2, jqSetpath))
	if err != nil {
		return nil, inputErrorf(ErrZone, "invalid jq zone %q: %v", zone, err)
	}
	return code, nil
}

// jq's "+" and "*" are replaced by functions that refuse to make a
// string longer than jqMaxString or an array longer than jqMaxArray, then
// call jq's own operator: "x" * 1e9, or a string or array doubled in a
// loop, is one allocation the time limit cannot stop.
const (
	jqAddFunc   = "_changedigest_add"
	jqMulFunc   = "_changedigest_multiply"
	jqMaxString = 16 << 20
	jqMaxArray  = 1 << 20
)

// boundOperators rewrites every "a + b" and "a * b" in the query v points
// to as jqAddFunc(a; b) and jqMulFunc(a; b), walking the syntax tree by
// reflection so that no kind of term is missed.
func boundOperators(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if q, ok := v.Interface().(*gojq.Query); ok && (q.Op == gojq.OpAdd || q.Op == gojq.OpMul) {
			boundOperators(reflect.ValueOf(q.Left))
			boundOperators(reflect.ValueOf(q.Right))
			name := jqAddFunc
			if q.Op == gojq.OpMul {
				name = jqMulFunc
			}
			*q = gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: []*gojq.Query{q.Left, q.Right}}}}
			return
		}
		boundOperators(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				boundOperators(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			boundOperators(v.Index(i))
		}
	}
}

// jqOperator is jq's own operator op over $a and $b.
func jqOperator(op string) func() *gojq.Code {
	return sync.OnceValue(func() *gojq.Code {
		q, err := gojq.Parse("$a " + op + " $b")
		if err != nil {
			panic(err)
		}
		code, err := gojq.Compile(q, gojq.WithVariables([]string{"$a", "$b"}))
		if err != nil {
			panic(err)
		}
		return code
	})
}

var jqAddCode, jqMulCode = jqOperator("+"), jqOperator("*")

func jqAdd(_ any, args []any) any {
	switch a := args[0].(type) {
	case string:
		if b, ok := args[1].(string); ok && len(a)+len(b) > jqMaxString {
			return fmt.Errorf("adding strings of %d and %d bytes makes one longer than %d bytes", len(a), len(b), jqMaxString)
		}
	case []any:
		if b, ok := args[1].([]any); ok && len(a)+len(b) > jqMaxArray {
			return fmt.Errorf("adding arrays of %d and %d values makes one longer than %d values", len(a), len(b), jqMaxArray)
		}
	}
	v, _ := jqAddCode().Run(nil, args[0], args[1]).Next()
	return v
}

func jqMultiply(_ any, args []any) any {
	a, b := args[0], args[1]
	if _, ok := b.(string); ok {
		a, b = b, a
	}
	if s, ok := a.(string); ok {
		if n, ok := gojq.ToFloat64(b); ok && n > 0 && float64(len(s))*n > jqMaxString {
			return fmt.Errorf("a string of %d bytes repeated %v times is longer than %d bytes", len(s), n, jqMaxString)
		}
	}
	v, _ := jqMulCode().Run(nil, args[0], args[1]).Next()
	return v
}

// Setting a path makes an array as long as the index it sets
// (.a[100000000] = 1 is 1.5 GB at once). The prelude puts a bounded
// setpath in place of jq's, for the program and for the builtins that
// set paths (fromstream, pick), and the assignment operators as jq
// defines them over it; boundAssignments rewrites "a = b", "a |= f" and
// "a += b"… as calls of these.
const (
	jqSetpathFunc = "_changedigest_setpath"
	jqPrelude     = `
def setpath($p; $v): _changedigest_setpath($p; $v);
def _changedigest_assign(p; $v): reduce path(p) as $q (.; setpath($q; $v));
def _changedigest_modify(p; f): reduce path(p) as $q (.; . as $x | label $out | (setpath($q; $x | getpath($q) | f) | ., break $out), delpaths([$q]));
def _changedigest_update_add(p; $v): _changedigest_modify(p; . + $v);
def _changedigest_update_sub(p; $v): _changedigest_modify(p; . - $v);
def _changedigest_update_mul(p; $v): _changedigest_modify(p; . * $v);
def _changedigest_update_div(p; $v): _changedigest_modify(p; . / $v);
def _changedigest_update_mod(p; $v): _changedigest_modify(p; . % $v);
def _changedigest_update_alt(p; $v): _changedigest_modify(p; . // $v);
def fromstream(f): foreach f as $pv (null; if .e then null end | $pv as [$p, $v] | if $pv | length == 2 then setpath(["v"] + $p; $v) | setpath(["e"]; $p | length == 0) else setpath(["e"]; $p | length == 1) end; if .e then .v else empty end);
def pick(f): . as $v | reduce path(f) as $p (null; setpath($p; $v | getpath($p)));
.`
)

// jqAssignFuncs are the prelude's functions of the assignment operators.
var jqAssignFuncs = map[gojq.Operator]string{
	gojq.OpAssign: "_changedigest_assign", gojq.OpModify: "_changedigest_modify",
	gojq.OpUpdateAdd: "_changedigest_update_add", gojq.OpUpdateSub: "_changedigest_update_sub",
	gojq.OpUpdateMul: "_changedigest_update_mul", gojq.OpUpdateDiv: "_changedigest_update_div",
	gojq.OpUpdateMod: "_changedigest_update_mod", gojq.OpUpdateAlt: "_changedigest_update_alt",
}

// boundAssignments rewrites every assignment in the query v points to
// as a call of the prelude's function for it.
func boundAssignments(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if q, ok := v.Interface().(*gojq.Query); ok {
			if name, ok := jqAssignFuncs[q.Op]; ok {
				boundAssignments(reflect.ValueOf(q.Left))
				boundAssignments(reflect.ValueOf(q.Right))
				*q = gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: []*gojq.Query{q.Left, q.Right}}}}
				return
			}
		}
		boundAssignments(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				boundAssignments(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			boundAssignments(v.Index(i))
		}
	}
}

var jqSetpathCode = sync.OnceValue(func() *gojq.Code {
	q, err := gojq.Parse("setpath($p; $v)")
	if err != nil {
		panic(err)
	}
	code, err := gojq.Compile(q, gojq.WithVariables([]string{"$p", "$v"}))
	if err != nil {
		panic(err)
	}
	return code
})

// jqSetpath is jq's setpath refusing an array index (or slice end) past
// jqMaxArray.
func jqSetpath(v any, args []any) any {
	if path, ok := args[0].([]any); ok {
		for _, p := range path {
			ns := []any{p}
			if m, ok := p.(map[string]any); ok {
				ns = []any{m["start"], m["end"]}
			}
			for _, n := range ns {
				if f, ok := gojq.ToFloat64(n); ok && f > jqMaxArray {
					return fmt.Errorf("setting index %v makes an array longer than %d values", n, jqMaxArray)
				}
			}
		}
	}
	r, _ := jqSetpathCode().Run(v, args[0], args[1]).Next()
	return r
}

// jqErrorText says where in src a parse error is.
func jqErrorText(err error, src string) string {
	var pe *gojq.ParseError
	if errors.As(err, &pe) && pe.Token != "" && pe.Offset <= len(src) {
		return fmt.Sprintf("%v at byte %d of the program", err, max(pe.Offset-len(pe.Token), 0)+1)
	}
	return err.Error()
}

// runJQ runs the jq zone over root under ctx and at most timeout: its
// one output, an array of its outputs when there are several, or nil
// when none. size is the document's, for the bound on the outputs.
func runJQ(ctx context.Context, root *jsonNode, zone string, timeout time.Duration, size int) (*jsonNode, error) {
	code, err := parseJQ(zone)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = DefaultJQTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conv := &jqConv{budget: jqMaxBytes(size)}
	var outs []*jsonNode
	iter := code.RunWithContext(rctx, root.value())
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := v.(error); isErr {
			switch {
			case ctx.Err() != nil: // the check's own context
				return nil, fmt.Errorf("segmenter: %w", ctx.Err())
			case errors.Is(err, context.DeadlineExceeded):
				return nil, inputErrorf(ErrZone, "jq zone %q ran longer than %v and was stopped", zone, timeout)
			}
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break // halt: the outputs so far
			}
			return nil, inputErrorf(ErrZone, "jq zone %q: %v", zone, err)
		}
		if len(outs) == JQMaxOutputs {
			return nil, inputErrorf(ErrZone, "jq zone %q gives more than %d outputs", zone, JQMaxOutputs)
		}
		n, ok := conv.node(v, 0)
		if !ok {
			return nil, inputErrorf(ErrZone, "jq zone %q gives more than %d bytes (or is nested deeper than %d)", zone, jqMaxBytes(size), jsonMaxDepth)
		}
		outs = append(outs, n)
	}
	switch len(outs) {
	case 0:
		return nil, nil
	case 1:
		return outs[0], nil
	}
	return &jsonNode{kind: 'a', kids: outs}, nil
}

// value converts n to the values gojq reads: map[string]any, []any,
// json.Number, string, bool and nil.
func (n *jsonNode) value() any {
	switch n.kind {
	case 'o':
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = n.kids[i].value()
		}
		return m
	case 'a':
		a := make([]any, len(n.kids))
		for i, kid := range n.kids {
			a[i] = kid.value()
		}
		return a
	case 's':
		return n.scalar
	case 'n':
		return json.Number(n.scalar)
	case 'b':
		return n.scalar == "true"
	}
	return nil
}

// jqConv converts a jq program's outputs back to jsonNodes within a
// budget of bytes.
type jqConv struct{ budget int }

func (c *jqConv) spend(n int) bool {
	c.budget -= n
	return c.budget >= 0
}

// node converts v; false when the budget or the depth bound is passed.
func (c *jqConv) node(v any, depth int) (*jsonNode, bool) {
	if depth > jsonMaxDepth || !c.spend(2) {
		return nil, false
	}
	scalar := func(kind byte, s string) (*jsonNode, bool) {
		return &jsonNode{kind: kind, scalar: s}, c.spend(len(s))
	}
	switch v := v.(type) {
	case nil:
		return scalar('z', "null")
	case bool:
		return scalar('b', strconv.FormatBool(v))
	case string:
		return scalar('s', v)
	case int:
		return scalar('n', strconv.Itoa(v))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return scalar('n', strconv.FormatFloat(v, 'g', -1, 64))
		}
		b, _ := gojq.Marshal(v)
		return scalar('n', string(b))
	case *big.Int:
		return scalar('n', v.String())
	case json.Number:
		return scalar('n', v.String())
	case []any:
		n := &jsonNode{kind: 'a', kids: make([]*jsonNode, 0, min(len(v), 1024))}
		for _, e := range v {
			kid, ok := c.node(e, depth+1)
			if !ok {
				return nil, false
			}
			n.kids = append(n.kids, kid)
		}
		return n, true
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		n := &jsonNode{kind: 'o', keys: keys, kids: make([]*jsonNode, 0, len(keys))}
		for _, k := range keys {
			kid, ok := c.node(v[k], depth+1)
			if !ok || !c.spend(len(k)) {
				return nil, false
			}
			n.kids = append(n.kids, kid)
		}
		return n, true
	}
	return scalar('s', fmt.Sprint(v))
}
