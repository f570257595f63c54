package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Variables written the way other tools write them, which vigil would send
// as they are: Checkly's and Postman's {{name}}, and a shell's $NAME (a
// bare $ and an identifier, as in a curl command line copied over). vigil
// reads ${NAME} (and ${env:NAME} inside a script). The request would go out
// with the text as written and fail (401, 404) with nothing pointing at the
// cause, so validate warns, naming the key and the vigil form.
var (
	postmanVarRE = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	// $NAME: a $ that starts no ${…} (nor $${, a literal ${); the byte
	// before it is checked apart (see shellVars).
	shellVarRE = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	// A GraphQL operation with variables, whose $name are its own:
	// "query($id: ID!) { user(id: $id) { name } }".
	graphQLVarsRE = regexp.MustCompile(`\b(query|mutation|subscription)\b[^{]*\(\s*\$`)
)

// foreignVar is a variable of another tool's syntax found in a request
// field: the key path, the value as written, and the references in it.
type foreignVar struct {
	key, value string
	postman    []string // names written {{name}}
	shell      []string // names written $NAME
	refs       []string // each reference as written ("{{token}}", "$API_TOKEN")
}

// message is the warning about v: one per value, naming the first
// reference of each kind.
func (v foreignVar) message() string {
	var parts []string
	if len(v.postman) > 0 {
		n := v.postman[0]
		parts = append(parts, fmt.Sprintf("looks like a Checkly/Postman variable: vigil writes ${%s} (or ${env:%s} for the environment)", n, n))
	}
	if len(v.shell) > 0 {
		n := v.shell[0]
		kind := "looks like a shell variable"
		if len(parts) > 0 {
			kind = "and $" + n + " like a shell variable"
		}
		parts = append(parts, fmt.Sprintf("%s: vigil writes ${%s} (or ${env:%s} for the environment)", kind, n, n))
	}
	return fmt.Sprintf("%s: %q %s", v.key, v.value, strings.Join(parts, ", "))
}

// foreignVars returns the variables of other tools' syntax in the request
// fields of settings (the file's tree before ${NAME} interpolation), in key
// order: a check's url, and the url, path, headers, query and form values,
// body and json values of its http: and of its script's http steps. Other
// fields, where a $ is at home (a regex in expect, a JSONPath $.x in
// extract, an expression), are not looked at.
func foreignVars(settings map[string]any) []foreignVar {
	var out []foreignVar
	list, _ := lookupKey(settings, "checks")
	checkList, _ := list.([]any)
	for i, c := range checkList {
		cm, _ := c.(map[string]any)
		if cm == nil {
			continue
		}
		base := fmt.Sprintf("checks[%d]", i)
		if u, ok := lookupKey(cm, "url"); ok {
			out = appendForeign(out, base+"."+keyAs(cm, "url"), u, true)
		}
		if h, ok := lookupKey(cm, "http"); ok {
			out = append(out, httpForeign(base+"."+keyAs(cm, "http"), h)...)
		}
		sv, _ := lookupKey(cm, "script")
		steps, _ := sv.([]any)
		for j, st := range steps {
			sm, _ := st.(map[string]any)
			if h, ok := lookupKey(sm, "http"); ok && sm != nil {
				out = append(out, httpForeign(fmt.Sprintf("%s.%s[%d].%s", base, keyAs(cm, "script"), j, keyAs(sm, "http")), h)...)
			}
		}
	}
	return out
}

// keyAs is key as m writes it (keys match case-insensitively).
func keyAs(m map[string]any, key string) string {
	for k := range m {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	return key
}

// httpForeign is foreignVars for an http: mapping at path.
func httpForeign(path string, h any) []foreignVar {
	hm, _ := h.(map[string]any)
	if hm == nil {
		return nil
	}
	var out []foreignVar
	for _, k := range slices.Sorted(maps.Keys(hm)) {
		p := path + "." + k
		switch strings.ToLower(k) {
		case "url", "path":
			out = appendForeign(out, p, hm[k], true)
		case "body":
			out = appendForeign(out, p, hm[k], false)
		case "headers", "query", "form", "json":
			out = appendForeign(out, p, hm[k], false)
		}
	}
	return out
}

// appendForeign adds to out the variables of other tools' syntax in v
// (a value, or the values of a mapping or list under it) at path. In a
// URL, a $name right after ? or & is a query parameter's name (OData's
// $filter, $top), not a variable.
func appendForeign(out []foreignVar, path string, v any, url bool) []foreignVar {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = appendForeign(out, path+"."+k, x[k], url)
		}
	case []any:
		for i, e := range x {
			out = appendForeign(out, fmt.Sprintf("%s[%d]", path, i), e, url)
		}
	case string:
		fv := foreignVar{key: path, value: x}
		for _, m := range postmanVarRE.FindAllStringSubmatch(x, -1) {
			fv.postman = append(fv.postman, m[1])
			fv.refs = append(fv.refs, m[0])
		}
		if !graphQLVarsRE.MatchString(x) {
			for _, loc := range shellVarRE.FindAllStringSubmatchIndex(x, -1) {
				if before := prevByte(x, loc[0]); before == '$' || (url && (before == '?' || before == '&')) {
					continue
				}
				fv.shell = append(fv.shell, x[loc[2]:loc[3]])
				fv.refs = append(fv.refs, x[loc[0]:loc[1]])
			}
		}
		if len(fv.refs) > 0 {
			out = append(out, fv)
		}
	}
	return out
}

// prevByte is the byte of s before i, 0 at the start.
func prevByte(s string, i int) byte {
	if i == 0 {
		return 0
	}
	return s[i-1]
}

// foreignVarWarnings are the warnings about fvs. A value that is a
// credential (an Authorization header's) is quoted with its secrets hidden
// as everywhere else, but not the references themselves: "{{token}}" is
// what was meant as a name, not a credential.
func (f *File) foreignVarWarnings(fvs []foreignVar) []string {
	if len(fvs) == 0 {
		return nil
	}
	refs := map[string]bool{}
	for _, fv := range fvs {
		for _, r := range fv.refs {
			refs[r] = true
		}
	}
	red := &redactor{}
	for _, sec := range f.Config.Secrets() {
		for _, part := range withoutRefs(sec, refs) {
			red.add("url", strings.TrimSpace(part))
		}
	}
	var out []string
	for _, fv := range fvs {
		out = append(out, red.redact(fv.message()))
	}
	return out
}
