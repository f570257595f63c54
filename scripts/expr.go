package scripts

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// exprEnv is what an expression step sees: `vars` and `last`.
type exprEnv struct {
	Vars map[string]string `expr:"vars"`
	Last lastResponse      `expr:"last"`
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

// compileExpr type-checks and compiles a boolean expression.
func compileExpr(src string) (*vm.Program, error) {
	return expr.Compile(src, expr.Env(exprEnv{}), expr.AsBool())
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

// exprVars lists the names used as `vars.name` or `vars["name"]` in src.
func exprVars(src string) []string {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	v := &varVisitor{}
	ast.Walk(&tree.Node, v)
	return v.names
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
		v.names = append(v.names, s.Value)
	}
}
