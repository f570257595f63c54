package grafana

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// writeYAML renders a JSON-shaped value (map[string]any, []any, string,
// float64, bool, nil, as encoding/json decodes) as block-style YAML with
// sorted keys, so generated provisioning files are stable and readable.
// Strings with newlines become literal blocks (|-), other strings are
// double-quoted; keys listed in first come before the sorted rest.
func writeYAML(sb *strings.Builder, v any, indent int, first []string) error {
	pad := strings.Repeat("  ", indent)
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			sb.WriteString(" {}\n")
			return nil
		}
		sb.WriteString("\n")
		for _, k := range orderedKeys(x, first) {
			sb.WriteString(pad + yamlKey(k) + ":")
			if err := writeYAML(sb, x[k], indent+1, first); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		if len(x) == 0 {
			sb.WriteString(" []\n")
			return nil
		}
		sb.WriteString("\n")
		for i, e := range x {
			// "- " then the element's first line at the same column as its keys.
			var inner strings.Builder
			if err := writeYAML(&inner, e, indent+1, first); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
			s := inner.String()
			if m, ok := e.(map[string]any); ok && len(m) > 0 {
				s = strings.TrimPrefix(s, "\n")
				s = strings.TrimPrefix(s, strings.Repeat("  ", indent+1))
				sb.WriteString(pad + "- " + s)
			} else {
				sb.WriteString(pad + "-" + s)
			}
		}
	default:
		sb.WriteString(" " + yamlScalar(v, pad) + "\n")
	}
	return nil
}

// yamlReserved are plain scalars YAML 1.1/1.2 read as null or booleans.
var yamlReserved = map[string]bool{"null": true, "~": true, "true": true, "false": true,
	"yes": true, "no": true, "on": true, "off": true, "y": true, "n": true}

func orderedKeys(m map[string]any, first []string) []string {
	keys := make([]string, 0, len(m))
	seen := map[string]bool{}
	for _, k := range first {
		if _, ok := m[k]; ok && !seen[k] {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

func yamlKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return strconv.Quote(k)
		}
	}
	if k == "" || yamlReserved[strings.ToLower(k)] {
		return strconv.Quote(k)
	}
	if _, err := strconv.ParseFloat(k, 64); err == nil {
		return strconv.Quote(k)
	}
	return k
}

func yamlScalar(v any, pad string) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case string:
		if strings.Contains(x, "\n") && !strings.HasSuffix(x, "\n") && !strings.Contains(x, "\t") && !hasTrailingSpace(x) {
			lines := strings.Split(x, "\n")
			return "|-\n" + pad + strings.Join(lines, "\n"+pad)
		}
		return strconv.Quote(x)
	default:
		return strconv.Quote(fmt.Sprint(x))
	}
}

func hasTrailingSpace(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasSuffix(l, " ") {
			return true
		}
	}
	return false
}
