package units

import (
	"errors"
	"fmt"
)

// ErrNotPositive is the error of a key that must be above 0.
var ErrNotPositive = errors.New("must be positive")

// KeySet holds the keys a config file set, relative to its section
// ("pools[0].max_ejected"), so that validation tells an explicit 0 from an
// omitted key. The nil KeySet (SetKeys never called) has no keys: every 0
// reads as omitted.
type KeySet map[string]bool

// NewKeySet returns the set of keys.
func NewKeySet(keys []string) KeySet {
	s := make(KeySet, len(keys))
	for _, k := range keys {
		s[k] = true
	}
	return s
}

// Has reports whether the file set key.
func (s KeySet) Has(key string) bool { return s[key] }

// ZeroKey is a key whose explicit 0 is an error: Zero reports that its
// decoded value is 0, Default says what omitting it gives.
type ZeroKey struct {
	Name    string
	Zero    bool
	Default string
}

// ExplicitZeros returns an error for each key the file set to 0:
// "retry.tries: 0: must be positive (omit the key for the default, 3)".
func (s KeySet) ExplicitZeros(keys []ZeroKey) []error {
	var errs []error
	for _, k := range keys {
		if k.Zero && s[k.Name] {
			errs = append(errs, fmt.Errorf("%s: 0: %w (omit the key for the default, %s)", k.Name, ErrNotPositive, k.Default))
		}
	}
	return errs
}

// Zero returns a ZeroKey.
func Zero(name string, zero bool, def string) ZeroKey {
	return ZeroKey{Name: name, Zero: zero, Default: def}
}
