package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

const verdictCols = `check_name, target, tier, region, vantage, state, ok, cause, err, status_code,
	ttfb, duration, dns, connect, tls, transfer, streak, interval, at, expires, artifact, url, cert_expiry, proto, held_until, instance, since`

const verdictParams = `?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?`

const insertVerdict = `INSERT INTO verdicts (` + verdictCols + `) VALUES (` + verdictParams + `)`

// upsertLatest keeps the newest verdict per series; an older verdict
// arriving late does not replace a newer one.
const upsertLatest = `INSERT INTO latest (` + verdictCols + `) VALUES (` + verdictParams + `)
ON CONFLICT (check_name, target, region, vantage) DO UPDATE SET
	tier=excluded.tier, state=excluded.state, ok=excluded.ok, cause=excluded.cause, err=excluded.err,
	status_code=excluded.status_code, ttfb=excluded.ttfb, duration=excluded.duration, dns=excluded.dns,
	connect=excluded.connect, tls=excluded.tls, transfer=excluded.transfer, streak=excluded.streak,
	interval=excluded.interval, at=excluded.at, expires=excluded.expires, artifact=excluded.artifact, url=excluded.url,
	cert_expiry=excluded.cert_expiry, proto=excluded.proto, held_until=excluded.held_until,
	instance=excluded.instance, since=excluded.since
WHERE excluded.at >= latest.at`

// upsertWriter extends the span of one instance's writes to one series.
const upsertWriter = `INSERT INTO writers (check_name, target, region, vantage, instance, first_at, last_at)
VALUES (?,?,?,?,?,?,?)
ON CONFLICT (check_name, target, region, vantage, instance) DO UPDATE SET
	first_at=min(first_at, excluded.first_at), last_at=max(last_at, excluded.last_at)`

func verdictArgs(v *reporting.Verdict) []any {
	return []any{v.Check, v.Target, v.Tier, v.Region, v.Vantage, string(v.State), v.OK, v.Cause, v.Err, v.StatusCode,
		int64(v.TTFB), int64(v.Duration), int64(v.DNS), int64(v.Connect), int64(v.TLS), int64(v.Transfer),
		v.Streak, int64(v.Interval), unixNano(v.At), unixNano(v.Expires), v.Artifact, v.URL, unixNano(v.CertExpiry), v.Proto,
		unixNano(v.HeldUntil), v.Instance, unixNano(v.Since)}
}

// unixNano maps the zero time to 0 (and back in fromNano).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

type rollupKey struct {
	check, target, region string
	minute                int64
}

type rollupAcc struct {
	total, failed, unhealthy int64
	sum, max                 int64
	hist                     ttfbHist
}

// Publish stores the batch in one transaction: raw rows, the latest table,
// the writers table and the minute rollups. A verdict with a zero At is stamped with the
// store's clock. When Publish returns nil the batch survives a process crash.
func (s *Store) Publish(ctx context.Context, vs []reporting.Verdict) error {
	if len(vs) == 0 {
		return nil
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()

	now := s.opts.Now()
	acc := map[rollupKey]*rollupAcc{}
	var order []rollupKey
	err := s.tx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, insertVerdict)
		if err != nil {
			return err
		}
		defer ins.Close()
		up, err := tx.PrepareContext(ctx, upsertLatest)
		if err != nil {
			return err
		}
		defer up.Close()
		var wr *sql.Stmt // prepared at the first verdict with an instance
		defer func() {
			if wr != nil {
				wr.Close()
			}
		}()
		for i := range vs {
			v := vs[i]
			if v.At.IsZero() {
				v.At = now
			}
			args := verdictArgs(&v)
			if _, err := ins.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("insert verdict: %w", err)
			}
			if _, err := up.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("upsert latest: %w", err)
			}
			if v.Instance != "" {
				if wr == nil {
					if wr, err = tx.PrepareContext(ctx, upsertWriter); err != nil {
						return err
					}
				}
				at := v.At.UnixNano()
				if _, err := wr.ExecContext(ctx, v.Check, v.Target, v.Region, v.Vantage, v.Instance, at, at); err != nil {
					return fmt.Errorf("upsert writer: %w", err)
				}
			}
			if v.AgentFault() {
				// A run the agent could not make is no run of the
				// target's: not in the rollups (totals, uptime, burn
				// rates).
				continue
			}
			k := rollupKey{v.Check, v.Target, v.Region, v.At.Truncate(time.Minute).UnixNano()}
			a := acc[k]
			if a == nil {
				a = &rollupAcc{hist: ttfbHist{}}
				acc[k] = a
				order = append(order, k)
			}
			a.total++
			if v.Unavailable() {
				a.failed++
			}
			if v.State == reporting.StateUnhealthy {
				a.unhealthy++
			}
			// Only TTFB samples enter the TTFB figures: a run that
			// timed out before its first byte in the histogram's
			// timed-out range, other failed runs not at all.
			if d, timedOut, ok := v.TTFBSample(); ok && timedOut {
				a.hist.addTimeout(d)
			} else if ok {
				a.sum += int64(d)
				a.max = max(a.max, int64(d))
				a.hist.add(d)
			}
		}
		for _, k := range order {
			if err := mergeRollup(ctx, tx, k, acc[k]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: publish %d verdicts: %w", len(vs), err)
	}
	return nil
}

func mergeRollup(ctx context.Context, tx *sql.Tx, k rollupKey, a *rollupAcc) error {
	if err := addHourly(ctx, tx, k, a.total, a.failed, a.unhealthy); err != nil {
		return err
	}
	var old rollupAcc
	var blob []byte
	err := tx.QueryRowContext(ctx, `SELECT total, failed, unhealthy, ttfb_sum, ttfb_max, ttfb_hist FROM rollups
		WHERE check_name=? AND target=? AND region=? AND minute=?`, k.check, k.target, k.region, k.minute).
		Scan(&old.total, &old.failed, &old.unhealthy, &old.sum, &old.max, &blob)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read rollup: %w", err)
	default:
		h, err := decodeHist(blob)
		if err != nil {
			return err
		}
		a.hist.merge(h)
		a.total += old.total
		a.failed += old.failed
		a.unhealthy += old.unhealthy
		a.sum += old.sum
		a.max = max(a.max, old.max)
	}
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO rollups
		(check_name, target, region, minute, total, failed, unhealthy, ttfb_sum, ttfb_max, ttfb_hist)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, k.check, k.target, k.region, k.minute,
		a.total, a.failed, a.unhealthy, a.sum, a.max, a.hist.encode())
	if err != nil {
		return fmt.Errorf("write rollup: %w", err)
	}
	return nil
}

// PublishSignals stores the proxy's observations; a zero At is stamped with
// the store's clock.
func (s *Store) PublishSignals(ctx context.Context, sigs []reporting.Signal) error {
	if len(sigs) == 0 {
		return nil
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	now := s.opts.Now()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO signals (pool, origin, region, vantage, at, window,
			requests, status_5xx, conn_errors, timeouts, p95, ejected, reason, out, out_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, g := range sigs {
			if g.At.IsZero() {
				g.At = now
			}
			if _, err := st.ExecContext(ctx, g.Pool, g.Origin, g.Region, g.Vantage, g.At.UnixNano(), int64(g.Window),
				g.Requests, g.Status5xx, g.ConnErrors, g.Timeouts, int64(g.P95), g.Ejected, g.Reason, g.Out, g.OutBy); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: publish %d signals: %w", len(sigs), err)
	}
	return nil
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
