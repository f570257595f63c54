package main

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// keyIndex maps the key paths of a config file ("checks[3].expect.status",
// "proxy.pools[0].origins[1]") to the line each is written on, so that an
// error naming a key can name its line too. viper and the struct decoder
// know no lines; the YAML node tree knows every one. It is built once per
// load from the node tree.
type keyIndex struct {
	exact map[string]keyPlace
	fold  map[string]keyPlace // lower-cased paths: the decoder matches keys case-insensitively
}

// keyPlace is where a key is written: its line, its column when it is
// written inside a flow collection (`{a: 1, b: x}`, `[a, b]`), where
// several keys or items share a line (0 otherwise), and, when the value
// comes from an anchor (`<<: *web` merging it in, or `*web` repeating it),
// the line of the merge key or alias that brought it into the path, and
// the anchor's name.
type keyPlace struct {
	line   int
	col    int
	via    int
	anchor string
	merged bool
}

// maxIndexedKeys bounds the index of a file whose aliases expand to a very
// large tree (the YAML decoder already refuses excessive aliasing).
const maxIndexedKeys = 1 << 20

// newKeyIndex indexes every key and list item of doc. Paths are spelt as
// the loader's errors spell them: keys joined by ".", list items as [i].
// A key written twice keeps its first line (such a file fails with both
// lines named before anything else is checked). Aliases are followed and
// merge keys applied as nodeValue applies them: a key of the mapping
// itself wins over a merged one, and of several merged mappings the first
// wins.
func newKeyIndex(doc *yaml.Node) *keyIndex {
	x := &keyIndex{exact: map[string]keyPlace{}, fold: map[string]keyPlace{}}
	if doc != nil {
		x.walk(doc, "", keyPlace{}, 0)
	}
	return x
}

func (x *keyIndex) add(path string, p keyPlace) bool {
	if len(x.exact) >= maxIndexedKeys {
		return false
	}
	if _, ok := x.exact[path]; !ok {
		x.exact[path] = p
	}
	if l := strings.ToLower(path); l != path {
		if _, ok := x.fold[l]; !ok {
			x.fold[l] = p
		}
	}
	return true
}

// walk indexes node n found at path. via is how the path reached n
// through an alias or a merge key (zero when it did not).
func (x *keyIndex) walk(n *yaml.Node, path string, via keyPlace, depth int) {
	if n == nil || depth > 200 || len(x.exact) >= maxIndexedKeys {
		return
	}
	flow := n.Style&yaml.FlowStyle != 0
	place := func(c *yaml.Node) keyPlace {
		p := via
		p.line, p.col = c.Line, 0
		if flow {
			p.col = c.Column
		}
		return p
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			x.walk(c, path, via, depth+1)
		}
	case yaml.AliasNode:
		if n.Alias == nil {
			return
		}
		if via.via == 0 {
			via = keyPlace{via: n.Line, anchor: n.Alias.Anchor}
		}
		x.walk(n.Alias, path, via, depth+1)
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if !x.add(p, place(c)) {
				return
			}
			x.walk(c, p, via, depth+1)
		}
	case yaml.MappingNode:
		own := map[string]bool{}
		var merges []*yaml.Node
		var mergeKeys []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				merges = append(merges, v)
				mergeKeys = append(mergeKeys, k)
				continue
			}
			key := nodeKey(k)
			own[key] = true
			p := joinKey(path, key)
			if !x.add(p, place(k)) {
				return
			}
			x.walk(v, p, via, depth+1)
		}
		// Merged keys: at the line they are written on in the anchored
		// mapping, through the merge key that brought them in.
		for i, m := range merges {
			mv := via
			if mv.via == 0 {
				mv = keyPlace{via: mergeKeys[i].Line, merged: true}
			}
			items := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				items = m.Content
			}
			for _, it := range items {
				iv := mv
				for it.Kind == yaml.AliasNode && it.Alias != nil {
					if iv.anchor == "" {
						iv.anchor = it.Alias.Anchor
					}
					it = it.Alias
				}
				if it.Kind != yaml.MappingNode {
					continue
				}
				x.walkMerged(it, path, iv, own, depth+1)
			}
		}
	}
}

// walkMerged indexes the keys of mapping m merged into the mapping at path,
// except those in own (set by the mapping itself or an earlier merge),
// which it then adds to own.
func (x *keyIndex) walkMerged(m *yaml.Node, path string, via keyPlace, own map[string]bool, depth int) {
	inner := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			continue
		}
		key := nodeKey(k)
		inner[key] = true
		if own[key] {
			continue
		}
		p := joinKey(path, key)
		kp := via
		kp.line, kp.col = k.Line, 0
		if m.Style&yaml.FlowStyle != 0 {
			kp.col = k.Column
		}
		if !x.add(p, kp) {
			return
		}
		x.walk(v, p, via, depth+1)
	}
	// A merged mapping's own merge keys: their keys are merged too.
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !(k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge") {
			continue
		}
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		for _, it := range items {
			for it.Kind == yaml.AliasNode && it.Alias != nil {
				it = it.Alias
			}
			if it.Kind == yaml.MappingNode {
				x.walkMerged(it, path, via, mergedOwn(own, inner), depth+1)
			}
		}
	}
	for k := range inner {
		own[k] = true
	}
}

// mergedOwn is the union of a and b.
func mergedOwn(a, b map[string]bool) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// compiledCheckRE matches the prefix of a check's compile error,
// "checks[3] (name): ", whose rest is a key path inside that check.
var compiledCheckRE = regexp.MustCompile(`^(checks\[\d+\]) \(.*?\): `)

// lookup returns where the key an error message msg starts with is
// written: the longest key path of the file msg starts with, so an error
// about a key the file leaves out (a defaulted timeout) is placed at the
// nearest enclosing key or list item that it writes. A map entry named as
// the decoder names it ("headers[X-Api-Key]") is found as "headers.X-Api-Key".
// false when msg names no key of the file.
func (x *keyIndex) lookup(msg string) (keyPlace, bool) {
	if x == nil {
		return keyPlace{}, false
	}
	if m := compiledCheckRE.FindStringSubmatch(msg); m != nil {
		rest := msg[len(m[0]):]
		if strings.HasPrefix(rest, "[") {
			msg = m[1] + rest
		} else {
			msg = m[1] + "." + rest
		}
	}
	// The key path: up to the first space outside brackets, at most 1 KiB.
	var b strings.Builder
	var ends []int // lengths of b at which a path may end
	for i := 0; i < len(msg) && i < 1024; i++ {
		c := msg[i]
		if c == '[' {
			j := strings.IndexByte(msg[i:], ']')
			if j < 0 {
				break
			}
			if b.Len() > 0 {
				ends = append(ends, b.Len())
			}
			inner := msg[i+1 : i+j]
			if inner != "" && digitsAt(inner) == len(inner) {
				b.WriteString(msg[i : i+j+1])
			} else {
				b.WriteByte('.')
				b.WriteString(inner)
			}
			ends = append(ends, b.Len())
			i += j
			continue
		}
		if c == ' ' || c == ':' && (i+1 == len(msg) || msg[i+1] == ' ') {
			// A key path is followed by ": " or by " (…)" (the name of
			// the element it is, the variable that set it); another
			// message ("no checks, …") names no key.
			if c == ' ' && !strings.HasPrefix(msg[i:], " (") {
				return keyPlace{}, false
			}
			break
		}
		if c == '.' && b.Len() > 0 {
			ends = append(ends, b.Len())
		}
		b.WriteByte(c)
	}
	ends = append(ends, b.Len())
	path := b.String()
	for i := len(ends) - 1; i >= 0; i-- {
		p := path[:ends[i]]
		if p == "" {
			continue
		}
		if kp, ok := x.exact[p]; ok {
			return kp, true
		}
		if kp, ok := x.fold[strings.ToLower(p)]; ok {
			return kp, true
		}
	}
	return keyPlace{}, false
}

// note is what an error placed at kp adds at its end when the value came
// through an anchor: the line that brought it into the key path.
func (kp keyPlace) note() string {
	switch {
	case kp.via == 0:
		return ""
	case kp.merged && kp.anchor != "":
		return fmt.Sprintf(" (merged by <<: *%s at line %d)", kp.anchor, kp.via)
	case kp.merged:
		return fmt.Sprintf(" (merged by <<: at line %d)", kp.via)
	}
	return fmt.Sprintf(" (via *%s at line %d)", kp.anchor, kp.via)
}

// lineError is a config error with the line of the file it is about, and
// its column where it is known (see keyPlace; 0 otherwise).
type lineError struct {
	line, col int
	note      string // added after the message (see keyPlace.note)
	// src is the text of the line, for an error about the text itself (a
	// YAML syntax error): the one-line message quotes it, and vigil
	// validate shows it under the message with a caret under col (see
	// excerpt). "" for an error about a key, whose line is found by its
	// path.
	src string
	err error
}

func (e *lineError) Error() string { return e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

// atLine is err placed at line of the file.
func atLine(line int, err error) error { return &lineError{line: line, err: err} }

// atPlace is err placed where kp says.
func atPlace(kp keyPlace, err error) error {
	return &lineError{line: kp.line, col: kp.col, note: kp.note(), err: err}
}

// prefix is how a message placed at line and col (0: none) of file starts:
// "FILE:LINE:COL: ", "FILE:LINE: ", or "FILE: " with no line.
func prefix(file string, line, col int) string {
	switch {
	case line > 0 && col > 0:
		return fmt.Sprintf("%s:%d:%d: ", file, line, col)
	case line > 0:
		return fmt.Sprintf("%s:%d: ", file, line)
	}
	return file + ": "
}
