package checks

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// JSONNull is the value of JSONExpect.Equals that asserts JSON null. A YAML
// `equals: null` (also `~` or an empty `equals:`) decodes to it through
// DecodeHook; from Go, set Equals: checks.JSONNull{}. A nil Equals means
// "not set", as for every other optional key.
type JSONNull struct{}

// MarshalJSON writes null.
func (JSONNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// HeaderMatchers is expect.headers: a response header name (any case)
// mapped to a matcher (see ParseHeaderMatcher).
type HeaderMatchers map[string]string

var (
	jsonExpectType     = reflect.TypeOf(JSONExpect{})
	statusListType     = reflect.TypeOf(StatusList(nil))
	headerMatchersType = reflect.TypeOf(HeaderMatchers(nil))
	tlsOptionsPtrType  = reflect.TypeOf((*TLSOptions)(nil))
	grpcTLSPtrType     = reflect.TypeOf((*GRPCTLS)(nil))
)

// errHeadersNotMap is the decode error of an expect.headers written as a
// list; the decoder prefixes the key.
var errHeadersNotMap = errors.New(`want a map of header: value (e.g. {X-Cache: present}), got a list`)

// errTLSShape is the decode error of a tcp.tls that is neither a boolean
// nor a map of TLS settings.
var errTLSShape = errors.New("want true, false or a map of TLS settings (insecure_skip_verify, ca_file, server_name, min_version, cert_file, key_file)")

// DecodeHook is a mapstructure decode hook (func(from, to reflect.Type,
// data any) (any, error)) that the config loader runs before its other
// hooks. It keeps what weakly typed decoding would lose or garble:
//   - `equals: null` in an expect.json element becomes JSONNull{} (a nil
//     value would otherwise read as "equals not set");
//   - a boolean in expect.status stays "true"/"false" (weak decoding makes
//     it "1"/"0", which the error would then show);
//   - expect.headers written as a list is an error that says a map is
//     expected;
//   - a boolean where TLS options go (tcp.tls) is TLS with the default
//     settings (true) or none (false);
//   - a boolean for grpc.tls is TLS with the default settings (true) or
//     plain-text HTTP/2, h2c (false: a GRPCTLS whose Off is true).
func DecodeHook(_, to reflect.Type, data any) (any, error) {
	switch to {
	case grpcTLSPtrType:
		b, isBool, err := tlsBool(data)
		if err != nil {
			return nil, err
		}
		if isBool {
			if !b {
				return &GRPCTLS{off: true}, nil
			}
			return map[string]any{}, nil
		}
	case jsonExpectType:
		m, ok := data.(map[string]any)
		if !ok {
			return data, nil
		}
		for k, v := range m {
			if v == nil && strings.EqualFold(k, "equals") {
				c := make(map[string]any, len(m))
				for k2, v2 := range m {
					c[k2] = v2
				}
				c[k] = JSONNull{}
				return c, nil
			}
		}
	case statusListType:
		switch x := data.(type) {
		case bool:
			return fmt.Sprint(x), nil
		case []any:
			out := make([]any, len(x))
			for i, v := range x {
				if b, ok := v.(bool); ok {
					v = fmt.Sprint(b)
				}
				out[i] = v
			}
			return out, nil
		}
	case tlsOptionsPtrType:
		b, isBool, err := tlsBool(data)
		if err != nil {
			return nil, err
		}
		if isBool {
			if !b {
				// Typed, so that the hooks after this one see a value.
				return (*TLSOptions)(nil), nil
			}
			return map[string]any{}, nil
		}
	case headerMatchersType:
		if _, ok := data.([]any); ok {
			return nil, errHeadersNotMap
		}
	}
	return data, nil
}

// tlsBool reads a tls: key given as a boolean: true or false, or their
// text (a value from the environment, ${TLS}, arrives as text); isBool is
// false for anything else (a mapping of settings).
func tlsBool(data any) (b, isBool bool, err error) {
	switch v := data.(type) {
	case bool:
		return v, true, nil
	case string:
		p, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return false, false, fmt.Errorf("%q: %w", v, errTLSShape)
		}
		return p, true, nil
	}
	return false, false, nil
}
