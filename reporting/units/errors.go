package units

import (
	"errors"
	"strings"
)

// Prefix puts a key-path prefix in front of every error in err (errors
// joined with errors.Join are prefixed one by one), so nested config structs
// can report "expect.status: …" and their parent turn it into
// "checks[2].expect.status: …". A prefix ending in "]" or "." is joined as is;
// otherwise a "." is added. Prefix(p, nil) is nil.
func Prefix(prefix string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Prefix(prefix, e))
		}
		return errors.Join(out...)
	}
	return &pathError{path: join(prefix, ""), err: err}
}

func join(prefix, rest string) string {
	if prefix == "" || strings.HasSuffix(prefix, ".") {
		return prefix + rest
	}
	return prefix + "." + rest
}

type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string {
	msg := e.err.Error()
	p := strings.TrimSuffix(e.path, ".")
	if pe, ok := e.err.(*pathError); ok {
		// nested: a.b + c.d: msg
		if strings.HasPrefix(pe.path, "[") {
			return p + pe.Error()
		}
		return p + "." + pe.Error()
	}
	if strings.HasPrefix(msg, "[") {
		return p + msg
	}
	// Errors produced as "key: message" by a child are joined with ".".
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsAny(msg[:i], " \"'") {
		return p + "." + msg
	}
	return p + ": " + msg
}

func (e *pathError) Unwrap() error { return e.err }

// Errors splits err into its joined parts (one element for a plain error,
// none for nil), for printing one error per line.
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Errors(e)...)
		}
		return out
	}
	return []error{err}
}
