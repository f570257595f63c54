// Package scripts runs check scripts authored in the config: ordered steps
// that make multi-step API transactions (HTTP requests with the checks
// assertion vocabulary, value extraction into variables, expressions over
// the variables and the last response) and browser flows in a real headless
// Chromium driven through chromedp (navigate, click, type, wait, assert,
// evaluate JavaScript, screenshots).
//
// A Script is decoded from a check's `script:` list, validated and compiled
// once at config load (Script.ValidateAndSetDefaults, then New), and run many
// times by the canary through the checks.Check interface. Every run gets its
// own variables, its own cookie jar and, for browser steps, its own isolated
// browser context (an incognito-like profile) in one shared Chromium process
// owned by a Browser.
//
// Causes: a failed browser step or expression, or an HTTP step whose
// assertion failed, fails the run with checks.CauseScript; the step's own
// cause (e.g. status, json) stays in its StepResult. An HTTP step that could
// not run (dns, connect_refused, timeout, tls, …) or failed an SLO assertion
// (ttfb, duration) passes its cause through to the Result, so the canary
// classifies an unreachable origin as "could not run" and a slow one as
// degraded. A browser that cannot start, or dies during a run, gives
// checks.CauseBrowserUnavailable, and a step that reads a ${env:NAME} the
// agent's environment does not set gives checks.CauseAgent: both are the
// agent's own trouble (checks.Cause.AgentFault), not counted against the
// target.
package scripts
