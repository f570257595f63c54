package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// rollups_hourly holds the per-minute rollups summed per hour (runs,
// failed, unhealthy and the oldest minute with runs), kept beside them and
// for as long (RollupRetention), so that 30 days of uptime or 3 days of
// burn rate read 720 or 72 rows per series instead of 43,200 or 4,320.
// It is written in the same transaction as the minute it sums.
const hourlySchema = `
CREATE TABLE IF NOT EXISTS rollups_hourly (
	check_name TEXT NOT NULL, target TEXT NOT NULL, region TEXT NOT NULL, hour INTEGER NOT NULL,
	total INTEGER NOT NULL, failed INTEGER NOT NULL, unhealthy INTEGER NOT NULL, first_minute INTEGER,
	PRIMARY KEY (check_name, target, region, hour)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rollups_hourly_target ON rollups_hourly(check_name, target, hour);
CREATE INDEX IF NOT EXISTS rollups_hourly_check ON rollups_hourly(check_name, hour);
CREATE INDEX IF NOT EXISTS rollups_hourly_hour ON rollups_hourly(hour);
`

const hourNanos = int64(time.Hour)

// ensureHourly creates rollups_hourly and, for a file written before it
// existed (minutes but no hours), fills it from the minutes: once.
func ensureHourly(w *sql.DB) error {
	if _, err := w.Exec(hourlySchema); err != nil {
		return err
	}
	var hours, minutes int
	if err := w.QueryRow(`SELECT EXISTS (SELECT 1 FROM rollups_hourly)`).Scan(&hours); err != nil {
		return err
	}
	if err := w.QueryRow(`SELECT EXISTS (SELECT 1 FROM rollups)`).Scan(&minutes); err != nil {
		return err
	}
	if hours == 1 || minutes == 0 {
		return nil
	}
	_, err := w.Exec(`INSERT INTO rollups_hourly (check_name, target, region, hour, total, failed, unhealthy, first_minute)
		SELECT check_name, target, region, (minute / ?) * ?, SUM(total), SUM(failed), SUM(unhealthy),
			MIN(CASE WHEN total > 0 THEN minute END)
		FROM rollups GROUP BY check_name, target, region, minute / ?`, hourNanos, hourNanos, hourNanos)
	return err
}

// addHourly adds one minute's new runs (total, failed, unhealthy: the
// runs just written, not the minute's sums) to its hour.
func addHourly(ctx context.Context, tx *sql.Tx, k rollupKey, total, failed, unhealthy int64) error {
	var first any // NULL without runs
	if total > 0 {
		first = k.minute
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO rollups_hourly (check_name, target, region, hour, total, failed, unhealthy, first_minute)
		VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT (check_name, target, region, hour) DO UPDATE SET
			total = total + excluded.total, failed = failed + excluded.failed, unhealthy = unhealthy + excluded.unhealthy,
			first_minute = CASE WHEN excluded.first_minute IS NULL THEN first_minute
				WHEN first_minute IS NULL THEN excluded.first_minute
				ELSE MIN(first_minute, excluded.first_minute) END`,
		k.check, k.target, k.region, k.minute-k.minute%hourNanos, total, failed, unhealthy, first)
	if err != nil {
		return fmt.Errorf("write hourly rollup: %w", err)
	}
	return nil
}

// RollupCounts implements reporting.RollupCounter: the whole hours inside
// [From, To] are read from rollups_hourly, the minutes at either end from
// rollups, so the sums are those of the minutes (as SumRollups over
// Rollups gives them) at the cost of a few rows per series. A step that is
// not a whole number of hours reads the minutes.
func (s *Store) RollupCounts(ctx context.Context, q reporting.HistoryQuery, step time.Duration) ([]reporting.RollupCount, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	from, to := s.bounds(q)
	if !q.From.IsZero() {
		from = q.From.Truncate(time.Minute).UnixNano()
	}
	start := time.Unix(0, from).UTC()
	if q.From.IsZero() {
		start = time.Time{}
	}
	type key struct {
		check, target, region string
		start                 int64
	}
	acc := map[key]*reporting.RollupCount{}
	add := func(check, target, region string, t int64, total, failed, unhealthy int, first sql.NullInt64) {
		b := start
		if step > 0 {
			b = time.Unix(0, t-t%int64(step)).UTC()
		}
		k := key{check, target, region, b.UnixNano()}
		c := acc[k]
		if c == nil {
			c = &reporting.RollupCount{Check: check, Target: target, Region: region, Start: b}
			acc[k] = c
		}
		c.Total += total
		c.Failed += failed
		c.Unhealthy += unhealthy
		if first.Valid {
			if f := time.Unix(0, first.Int64).UTC(); c.First.IsZero() || f.Before(c.First) {
				c.First = f
			}
		}
	}
	// Whole hours in [hFrom, hTo), when the step allows it. The hour of
	// the oldest minute kept may hold minutes pruned since (an hour goes
	// once all its minutes have): it is read from its minutes.
	// A window without a whole hour (a burn-rate pair's 5 or 30 minutes)
	// reads its minutes and needs not look for the oldest.
	hFrom, hTo := ceilHour(from), floorHour(to)
	useHours := hFrom < hTo && (step <= 0 || step%time.Hour == 0)
	if useHours {
		var oldest sql.NullInt64
		if err := s.r.QueryRowContext(ctx, `SELECT MIN(minute) FROM rollups`).Scan(&oldest); err != nil {
			return nil, fmt.Errorf("store: rollup counts: %w", err)
		}
		if oldest.Valid {
			hFrom = max(hFrom, ceilHour(oldest.Int64))
		}
		useHours = hFrom < hTo
	}
	read := func(query string, args []any) error {
		rows, err := s.r.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("store: rollup counts: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var check, target, region string
			var t int64
			var total, failed, unhealthy int
			var first sql.NullInt64
			if err := rows.Scan(&check, &target, &region, &t, &total, &failed, &unhealthy, &first); err != nil {
				return fmt.Errorf("store: rollup counts: %w", err)
			}
			add(check, target, region, t, total, failed, unhealthy, first)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: rollup counts: %w", err)
		}
		return nil
	}
	// The indexes whose columns are the filter's followed by the time: a
	// check's minutes at the ends are a few minutes of every series, read
	// by minute (the primary key would walk all of the check's minutes).
	minuteCols := `SELECT check_name, target, region, minute, total, failed, unhealthy, CASE WHEN total > 0 THEN minute END FROM rollups`
	hourCols := `SELECT check_name, target, region, hour, total, failed, unhealthy, first_minute FROM rollups_hourly`
	switch {
	case q.Target != "":
		hourCols += ` INDEXED BY rollups_hourly_target`
	case q.Check != "":
		minuteCols += ` INDEXED BY rollups_minute`
		hourCols += ` INDEXED BY rollups_hourly_check`
	}
	if !useHours {
		w, args := where(q, "minute", from, to)
		if err := read(minuteCols+w, args); err != nil {
			return nil, err
		}
	} else {
		// The minutes before the first whole hour and from the last one on.
		w1, a1 := where(q, "minute", from, hFrom-1)
		if err := read(minuteCols+w1, a1); err != nil {
			return nil, err
		}
		w2, a2 := where(q, "minute", hTo, to)
		if err := read(minuteCols+w2, a2); err != nil {
			return nil, err
		}
		wh, ah := where(q, "hour", hFrom, hTo-1)
		if err := read(hourCols+wh, ah); err != nil {
			return nil, err
		}
	}
	out := make([]reporting.RollupCount, 0, len(acc))
	for _, c := range acc {
		out = append(out, *c)
	}
	reporting.SortRollupCounts(out)
	return out, nil
}

func ceilHour(t int64) int64 {
	if r := t % hourNanos; r != 0 {
		if t < 0 {
			return t - r
		}
		return t - r + hourNanos
	}
	return t
}

func floorHour(t int64) int64 {
	r := t % hourNanos
	if r < 0 {
		r += hourNanos
	}
	return t - r
}
