package scripts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// exprEnv is what an expression step sees: `vars` and `last`.
type exprEnv struct {
	Vars map[string]string `expr:"vars"`
	Last lastResponse      `expr:"last"`
	// Var reads one variable: every `vars.name` and `vars[...]` is
	// compiled into a call of it (see lowerVarNames), so that a variable
	// that is not set fails the step naming it instead of reading as "".
	Var func(name string) (string, error) `expr:"vigil_var_"`
}

// varFunc is the identifier of exprEnv.Var in compiled expressions.
const varFunc = "vigil_var_"

// unsetVarError is the error of an expression that read a variable that
// is not set.
type unsetVarError struct{ name string }

func (e *unsetVarError) Error() string {
	return fmt.Sprintf("variable %s is not set (the step that extracts it did not run or failed)", e.name)
}

// newExprEnv is the environment of an expression over vars and last.
func newExprEnv(vars map[string]string, last lastResponse) exprEnv {
	return exprEnv{Vars: vars, Last: last, Var: func(name string) (string, error) {
		v, ok := vars[name]
		if !ok {
			return "", &unsetVarError{name: name}
		}
		return v, nil
	}}
}

// lastResponse is the last HTTP step's response as expressions see it.
type lastResponse struct {
	StatusCode int               `expr:"status_code"`
	Headers    map[string]string `expr:"headers"` // lower-case names, first value
	Body       string            `expr:"body"`
	JSON       any               `expr:"json"` // body decoded as JSON, nil if it is not JSON
	URL        string            `expr:"url"`
	DurationMS float64           `expr:"duration_ms"`
}

// compileExpr type-checks and compiles a boolean expression. Variable names
// written as literals (`vars.TOKEN`, `vars["Token"]`, `"TOKEN" in vars`)
// are lower-cased first, as `extract` names and `${name}` are: script
// variables match case-insensitively everywhere.
func compileExpr(src string) (*vm.Program, error) {
	return expr.Compile(src, expr.Env(exprEnv{}), expr.AsBool(), expr.Patch(lowerVarNames{}))
}

// lowerVarNames lower-cases the literal variable names of an expression,
// and turns every read of one variable (`vars.name`, `vars[expr]`) into a
// call of exprEnv.Var, which fails for a variable that is not set.
type lowerVarNames struct{}

func (lowerVarNames) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.MemberNode:
		if id, ok := x.Node.(*ast.IdentifierNode); ok && id.Value == "vars" {
			if s, ok := x.Property.(*ast.StringNode); ok {
				s.Value = strings.ToLower(s.Value)
			}
			ast.Patch(n, &ast.CallNode{Callee: &ast.IdentifierNode{Value: varFunc}, Arguments: []ast.Node{x.Property}})
		}
	case *ast.BinaryNode:
		if id, ok := x.Right.(*ast.IdentifierNode); ok && id.Value == "vars" && x.Operator == "in" {
			if s, ok := x.Left.(*ast.StringNode); ok {
				s.Value = strings.ToLower(s.Value)
			}
		}
	}
}

// runExpr evaluates a compiled expression.
func runExpr(p *vm.Program, env exprEnv) (bool, error) {
	out, err := expr.Run(p, env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("expression gave %T, not bool", out)
	}
	return b, nil
}

// exprVars lists the names used as `vars.name` or `vars["name"]` in src,
// lower-cased.
func exprVars(src string) []string {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	v := &varVisitor{}
	ast.Walk(&tree.Node, v)
	return v.names
}

// exprReadsLast reports whether src reads `last` (the last http step's
// response).
func exprReadsLast(src string) bool {
	tree, err := parser.Parse(src)
	if err != nil {
		return false
	}
	v := &lastVisitor{}
	ast.Walk(&tree.Node, v)
	return v.found
}

type lastVisitor struct{ found bool }

func (v *lastVisitor) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok && id.Value == "last" {
		v.found = true
	}
}

type varVisitor struct{ names []string }

func (v *varVisitor) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "vars" {
		return
	}
	if s, ok := m.Property.(*ast.StringNode); ok {
		v.names = append(v.names, strings.ToLower(s.Value))
	}
}

// maxExplained bounds the operands explainExpr names, and
// maxExplainedValue the length of each value it shows.
const (
	maxExplained      = 4
	maxExplainedValue = 80
)

// explainExpr names the values, as env gives them, of the operands of
// src's comparisons that are not literals ("len(last.json.orders) = 2"),
// for the message of an expression that was false: at most maxExplained
// of them, each value shortened. Operands that cannot be evaluated on
// their own are left out. An operand that reads a variable secretVar
// reports (its value is a secret of the run) is shown as "***", whatever
// it makes of the value (`vars.t[0:6]`, `split(vars.t, "-")[1]`): what is
// derived from a secret is not hidden by the redaction of the secret's
// own value. secretVar may be nil.
func explainExpr(src string, env exprEnv, secretVar func(name string) bool) string {
	tree, err := parser.Parse(src)
	if err != nil {
		return ""
	}
	v := &operandVisitor{}
	ast.Walk(&tree.Node, v)
	var parts []string
	seen := map[string]bool{}
	for _, n := range v.nodes {
		sub := n.String()
		if seen[sub] || len(parts) == maxExplained {
			continue
		}
		seen[sub] = true
		p, err := expr.Compile(sub, expr.Env(exprEnv{}), expr.Patch(lowerVarNames{}))
		if err != nil {
			continue
		}
		out, err := expr.Run(p, env)
		if err != nil {
			continue
		}
		if secretVar != nil && readsSecretVar(n, env.Vars, secretVar) {
			parts = append(parts, sub+" = ***")
			continue
		}
		parts = append(parts, sub+" = "+explainValue(n, out))
	}
	return strings.Join(parts, ", ")
}

// explainValue is how explainExpr shows the value out of the operand n,
// masked as an expect.json or expect.headers assertion masks its got
// (checks.MaskValue, checks.MaskJSON): a string, object or array read
// through a sensitive name (`last.headers["set-cookie"]`,
// `last.json.token`, `vars.password`; see checks.SensitiveName) as its
// length and digest, and JSON (an object, an array, a body that is JSON)
// with the values of its sensitive keys masked. The run's secrets are
// hidden later, with the rest of the message.
func explainValue(n ast.Node, out any) string {
	switch out.(type) {
	case string, map[string]any, []any, map[string]string:
		if sensitiveOperand(n) {
			if str, ok := out.(string); ok {
				return checks.MaskValue(str)
			}
			b, _ := json.Marshal(out)
			return checks.MaskValue(string(b))
		}
	}
	out = hideURLs(n, out)
	switch v := out.(type) {
	case string:
		if m, masked := checks.MaskJSON(strings.TrimPrefix(v, string(utf8BOM))); masked {
			return shortValue(m)
		}
	case map[string]any, []any, map[string]string:
		if b, err := json.Marshal(v); err == nil {
			if m, masked := checks.MaskJSON(string(b)); masked {
				return shortText(m)
			}
		}
	}
	return shortValue(out)
}

// hideURLs returns out, the value of the operand n, with the URLs it
// holds shown as every URL vigil shows (units.RedactURL: no userinfo,
// query values as "…", no fragment), as an expect.headers assertion shows
// a Location: a response header's value (`last.headers.location`, and
// each value of `last.headers` itself) as checks.ShownHeaderValue shows
// it, with every absolute URL in any other header's value (a Link's
// `<…>`, an X-Redirect-To) hidden the same way; a string that is an
// absolute URL (`last.url`, `last.json.next`, `vars.callback`), also as a
// value of `vars`; and such strings inside JSON (`last.json`, a
// `last.body` that is JSON, written back compactly). Other values are
// returned as they are.
func hideURLs(n ast.Node, out any) any {
	switch v := out.(type) {
	case string:
		if name, ok := headerOperand(n); ok {
			return shownHeader(name, v)
		}
		if checks.IsWholeURL(v) {
			return units.RedactURL(v)
		}
		if w, ok := checks.HideJSONTextURLs(v); ok {
			return w
		}
	case map[string]any, []any:
		if w, ok := checks.HideJSONURLs(v); ok {
			return w
		}
	case map[string]string:
		headers := isLastHeaders(n)
		m := make(map[string]string, len(v))
		for k, s := range v {
			switch {
			case headers:
				s = shownHeader(k, s)
			case checks.IsWholeURL(s):
				s = units.RedactURL(s)
			}
			m[k] = s
		}
		return m
	}
	return out
}

// absURL matches an absolute URL in a text: a scheme, "://" and what
// follows up to a space, a quote or an angle bracket.
var absURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s<>"']+`)

// shownHeader is the value v of the response header name as a message
// shows it (see hideURLs).
func shownHeader(name, v string) string {
	if s := checks.ShownHeaderValue(name, v); s != v {
		return s
	}
	return hideURLsIn(v)
}

// hideURLsIn returns text with every absolute URL in it shown as
// units.RedactURL shows it. Punctuation that ends a sentence or closes a
// bracket right after a URL (".", ",", ";", ":", "!", "?", ")", "]") is
// taken as the text's, not the URL's.
func hideURLsIn(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return absURL.ReplaceAllStringFunc(text, func(u string) string {
		trimmed := strings.TrimRight(u, ".,;:!?)]")
		return units.RedactURL(trimmed) + u[len(trimmed):]
	})
}

// isLastHeaders reports whether n is `last.headers`.
func isLastHeaders(n ast.Node) bool {
	m, ok := n.(*ast.MemberNode)
	if !ok {
		return false
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	p, isStr := m.Property.(*ast.StringNode)
	return ok && id.Value == "last" && isStr && p.Value == "headers"
}

// headerOperand returns the header name of an operand that reads one
// response header, `last.headers.location` or `last.headers["location"]`.
func headerOperand(n ast.Node) (string, bool) {
	m, ok := n.(*ast.MemberNode)
	if !ok || !isLastHeaders(m.Node) {
		return "", false
	}
	if p, ok := m.Property.(*ast.StringNode); ok {
		return p.Value, true
	}
	return "", false
}

// sensitiveOperand reports whether the operand n reads a value through a
// sensitive name: an identifier, or a member's name, that is one.
func sensitiveOperand(n ast.Node) bool {
	v := &sensitiveVisitor{}
	ast.Walk(&n, v)
	return v.found
}

type sensitiveVisitor struct{ found bool }

func (v *sensitiveVisitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.MemberNode:
		if s, ok := x.Property.(*ast.StringNode); ok && checks.SensitiveName(s.Value) {
			v.found = true
		}
	case *ast.IdentifierNode:
		if checks.SensitiveName(x.Value) {
			v.found = true
		}
	}
}

// readsSecretVar reports whether the operand n reads a script variable
// that secretVar reports: `vars.name` or `vars["name"]` of such a name, a
// `vars[…]` whose name is computed, or `vars` itself, when one of vars is.
func readsSecretVar(n ast.Node, vars map[string]string, secretVar func(string) bool) bool {
	v := &varReadVisitor{named: map[*ast.IdentifierNode]bool{}}
	ast.Walk(&n, v)
	anySecret := func() bool {
		for name := range vars {
			if secretVar(name) {
				return true
			}
		}
		return false
	}
	for _, name := range v.names {
		if secretVar(name) {
			return true
		}
	}
	for _, id := range v.all {
		if !v.named[id] {
			return anySecret() // vars[computed], or the whole map
		}
	}
	return false
}

// varReadVisitor collects the variables an operand reads by a literal
// name (lower-cased), and every `vars` identifier, those read through a
// literal name marked in named.
type varReadVisitor struct {
	names []string
	all   []*ast.IdentifierNode
	named map[*ast.IdentifierNode]bool
}

func (v *varReadVisitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		if x.Value == "vars" {
			v.all = append(v.all, x)
		}
	case *ast.MemberNode:
		id, ok := x.Node.(*ast.IdentifierNode)
		if !ok || id.Value != "vars" {
			return
		}
		if s, ok := x.Property.(*ast.StringNode); ok {
			v.names = append(v.names, strings.ToLower(s.Value))
			v.named[id] = true
		}
	}
}

// operandVisitor collects the operands of comparisons that are not
// literals.
type operandVisitor struct{ nodes []ast.Node }

func (v *operandVisitor) Visit(n *ast.Node) {
	b, ok := (*n).(*ast.BinaryNode)
	if !ok {
		return
	}
	switch b.Operator {
	case "==", "!=", "<", "<=", ">", ">=", "in", "not in", "matches", "contains", "startsWith", "endsWith":
		for _, o := range []ast.Node{b.Left, b.Right} {
			switch o.(type) {
			case *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.BoolNode, *ast.NilNode:
			default:
				v.nodes = append(v.nodes, o)
			}
		}
	}
}

// shortValue renders v as JSON (a string quoted), cut to maxExplainedValue
// bytes on a character boundary.
func shortValue(v any) string {
	var s string
	if str, ok := v.(string); ok {
		s = strconv.Quote(str)
	} else if b, err := json.Marshal(v); err == nil {
		s = string(b)
	} else {
		s = fmt.Sprint(v)
	}
	return shortText(s)
}

// shortText is s cut to maxExplainedValue bytes on a character boundary.
func shortText(s string) string {
	if len(s) > maxExplainedValue {
		cut := maxExplainedValue
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
