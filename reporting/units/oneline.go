package units

import "strings"

// SingleLine returns s on one line: each run of control characters (C0,
// DEL, C1: newlines, CRs, tabs) and Unicode line or paragraph separators
// becomes one space, and s is trimmed. For text from elsewhere (a
// receiver's error body, a store's error) that goes where one line is one
// item (/healthz reasons, a summary).
func SingleLine(s string) string {
	if !strings.ContainsFunc(s, breaksLine) && strings.TrimSpace(s) == s {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	gap := false
	for _, r := range s {
		if breaksLine(r) {
			gap = true
			continue
		}
		if gap {
			sb.WriteByte(' ')
			gap = false
		}
		sb.WriteRune(r)
	}
	return strings.TrimSpace(sb.String())
}

// breaksLine reports whether r is a control character or a line or
// paragraph separator.
func breaksLine(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029'
}
