package main

import (
	"errors"
	"regexp"
	"strings"
)

// unsetEnvErr matches the loader's error for a ${NAME} that is unset or
// empty in the environment, capturing the key path and NAME.
var unsetEnvErr = regexp.MustCompile(`^([^:]+): \$\{([A-Za-z_][A-Za-z0-9_]*)\} is (?:not set|empty) in the environment`)

// unsetPlaceholder stands in for a variable a command does not need while
// it loads the file: a value every string key that takes a secret accepts
// (an absolute URL, a header value, a token, a routing key).
const unsetPlaceholder = "http://unset.invalid/"

// loadConfigSkippingUnset loads the file as loadConfigWarnings does,
// except that a ${NAME} unset or empty in the environment is no error when
// every key that reads it is one skip accepts (a key the command does not
// use): the file is loaded again with a placeholder for those variables.
// A variable also read by a key skip refuses, any other error, and a key
// that does not accept the placeholder fail with the first load's errors.
// The warnings are those of the load that is returned.
func loadConfigSkippingUnset(path string, env func(string) (string, bool), environ []string, skip func(key string) bool) (*File, []warning, error) {
	f, warns, err := loadConfigWarnings(path, env, environ)
	var le *LoadError
	if err == nil || !errors.As(err, &le) || len(le.Errors) == 0 {
		return f, warns, err
	}
	unset := map[string]bool{}
	for _, e := range le.Errors {
		m := unsetEnvErr.FindStringSubmatch(e.Error())
		if m == nil || !skip(m[1]) {
			return f, warns, err
		}
		unset[m[2]] = true
	}
	f2, warns2, err2 := loadConfigWarnings(path, func(name string) (string, bool) {
		if unset[name] {
			return unsetPlaceholder, true
		}
		return env(name)
	}, environ)
	if err2 != nil {
		return f, warns, err
	}
	return f2, warns2, nil
}

// underAny reports whether key is one of sections or inside one of them
// ("alerting" holds "alerting.receivers[0].slack.url").
func underAny(key string, sections []string) bool {
	for _, s := range sections {
		if key == s || strings.HasPrefix(key, s+".") || strings.HasPrefix(key, s+"[") {
			return true
		}
	}
	return false
}
