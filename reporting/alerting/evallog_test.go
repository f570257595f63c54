package alerting

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lockedBuffer is a log destination safe for the alerter's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunLogsStoreOutageOnce: while the store cannot be read, Run logs the
// first failed evaluation at once, then at most one line per
// evalFailureLogEvery saying how many failed in a row, not one line per
// evaluation; when the store is readable again it logs one recovery line
// with the count.
func TestRunLogsStoreOutageOnce(t *testing.T) {
	defer func(d time.Duration) { evalFailureLogEvery = d }(evalFailureLogEvery)
	evalFailureLogEvery = 1500 * time.Millisecond
	var logs lockedBuffer
	store := &memStore{clock: time.Now}
	store.mu.Lock()
	store.err = errors.New(`Post "http://127.0.0.1:28086/query": dial tcp 127.0.0.1:28086: connect: connection refused`)
	store.mu.Unlock()
	reg := prometheus.NewRegistry()
	a, err := New(Config{EvaluationInterval: time.Second}, nil, store,
		Options{Registry: reg, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	failed := func() int { return int(counter(t, reg, "vigil_alert_evaluation_errors_total", nil)) }
	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(15 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within 15s; log:\n%s", what, logs.String())
			}
		}
	}
	wait("5 failed evaluations", func() bool { return failed() >= 5 })
	store.mu.Lock()
	store.err = nil
	store.mu.Unlock()
	wait("the recovery line", func() bool { return strings.Contains(logs.String(), "evaluation works again") })
	n := failed()

	var warns, recovered []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		switch {
		case strings.Contains(l, "level=WARN"):
			warns = append(warns, l)
		case strings.Contains(l, "evaluation works again"):
			recovered = append(recovered, l)
		}
	}
	if len(warns) == 0 || !strings.Contains(warns[0], "alerting: evaluation failed") || !strings.Contains(warns[0], "connection refused") {
		t.Fatalf("first warning %q, want the failure with the store's error; log:\n%s", warns, logs.String())
	}
	// 5+ failures over 4+ seconds, a line at most every 1.5s: 1 + 3 at most.
	if len(warns) > 4 || len(warns) >= n {
		t.Errorf("%d warnings for %d failed evaluations, want the first and one per %s; log:\n%s",
			len(warns), n, evalFailureLogEvery, logs.String())
	}
	if len(warns) < 2 || !strings.Contains(warns[1], "alerting: evaluation still failing") || !strings.Contains(warns[1], "not_logged=") {
		t.Errorf("no rate-limited \"still failing\" line with the count of lines left out; log:\n%s", logs.String())
	}
	if len(recovered) != 1 || !strings.Contains(recovered[0], "level=INFO") || !strings.Contains(recovered[0], "failures="+strconv.Itoa(n)) {
		t.Errorf("recovery lines %q, want one INFO line with failures=%d; log:\n%s", recovered, n, logs.String())
	}
}
