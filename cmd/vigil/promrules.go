package main

import (
	"errors"
	"os"
	"regexp"
)

// receiverEnvErr matches the loader's error for a ${NAME} of a receiver's
// key that is unset or empty in the environment, capturing NAME.
var receiverEnvErr = regexp.MustCompile(`^alerting\.receivers\[\d+\]\.[^:]*: \$\{([A-Za-z_][A-Za-z0-9_]*)\} is (?:not set|empty) in the environment`)

// rulesPlaceholder stands in for an unset receiver secret while
// --prometheus-rules loads the file: a value every receiver key accepts
// (an absolute URL, a header value, a routing key).
const rulesPlaceholder = "http://unset.invalid/"

// loadRulesConfig loads the file for --prometheus-rules: as loadConfig,
// except that ${NAME} variables used only by alerting.receivers may be
// unset or empty. The rules hold no receiver and no secret, so a CI job
// generating them needs neither the PagerDuty key nor the webhook
// tokens. Everything else is validated as usual: a variable unset
// elsewhere (also one a receiver shares with another key) or any other
// error fails with the loader's errors.
// Its warnings go to stderr as "warning: FILE:LINE: …" (see
// loadRulesConfigWarn).
func loadRulesConfig(path string, env func(string) (string, bool)) (*File, error) {
	return loadRulesConfigWarn(path, env, warnTo(os.Stderr))
}

// loadRulesConfigWarn is loadRulesConfig reporting the file's warnings to
// warn, once each.
func loadRulesConfigWarn(path string, env func(string) (string, bool), warn func(string)) (*File, error) {
	f, err := loadConfigWarn(path, env, os.Environ(), warn)
	var le *LoadError
	if err == nil || !errors.As(err, &le) || len(le.Errors) == 0 {
		return f, err
	}
	unset := map[string]bool{}
	for _, e := range le.Errors {
		m := receiverEnvErr.FindStringSubmatch(e.Error())
		if m == nil {
			return nil, err
		}
		unset[m[1]] = true
	}
	// The first load printed the warnings already.
	f, err2 := loadConfigWarn(path, func(name string) (string, bool) {
		if unset[name] {
			return rulesPlaceholder, true
		}
		return env(name)
	}, os.Environ(), func(string) {})
	if err2 != nil {
		return nil, err
	}
	return f, nil
}
