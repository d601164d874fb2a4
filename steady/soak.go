package steady

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/coldstart-go/coldstart/internal/progress"
	"github.com/coldstart-go/coldstart/internal/stats"
)

// SoakStep is the scenario of soak rows.
const SoakStep Scenario = "soak"

// RunSoak loads each arm (or the target) at cfg.Rate in open loop for
// cfg.Soak (with cfg.SoakAuto, until the RSS slope is known precisely
// enough, at most cfg.Soak), one window per cfg.SoakInterval, calling
// record with each interval's row as it ends and summary with each
// server's trends at the end. Each window's schedule starts when the
// previous window's last call has returned and the server has been read
// (a few milliseconds); within a window latency counts from each call's
// intended send time, so a stall shows in the window it began in.
func RunSoak(ctx context.Context, cfg Config, record func(SoakRow) error, summary func(SoakSummary) error) error {
	if cfg.Soak <= 0 {
		return optionf("Soak", "%v, want a positive duration", cfg.Soak)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	p, err := newPin(cfg.GeneratorCPUs)
	if err != nil {
		return err
	}
	if p != nil {
		defer p.release()
	}
	// Each server's soak reports its intervals, the total known up front.
	servers := len(cfg.Budgets) * len(cfg.Arms)
	if cfg.Target != nil {
		servers = 1
	}
	cfg.progress = progress.For(cfg.Log)
	cfg.progress.Start(servers*soakIntervals(cfg), "soak intervals")
	defer cfg.progress.Done() // before the caller prints results or the error
	soak := func(s *server) error { return soakServer(ctx, cfg, s, record, summary) }
	if cfg.Target != nil {
		s, err := attachTarget(ctx, cfg, *cfg.Target)
		if err != nil {
			return err
		}
		defer s.stop()
		if err := p.apply(); err != nil {
			return err
		}
		return soak(s)
	}
	for _, b := range cfg.Budgets {
		for _, a := range cfg.Arms {
			s, err := startArm(ctx, cfg, p, a, b)
			if err != nil {
				return err
			}
			err = soak(s)
			s.stop()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// soakServer runs the soak's windows on one ready server.
func soakServer(ctx context.Context, cfg Config, s *server, record func(SoakRow) error, summary func(SoakSummary) error) error {
	st := step{proto: cfg.Protocols[0], scenario: Open, payload: cfg.Payloads[0], rate: cfg.Rate}
	sh := steps(Config{Scenarios: []Scenario{Open}, MaxInFlight: cfg.MaxInFlight, Conns: cfg.Conns[:1], Pipeline: cfg.Pipeline[:1], Rate: cfg.Rate}, st.proto)
	st.concurrency, st.conns, st.depth = sh[0].concurrency, sh[0].conns, sh[0].depth

	var rows []SoakRow
	start := time.Now()
	n := soakIntervals(cfg)
	pr, err := prepareStep(ctx, cfg, s, st)
	if err != nil {
		return err
	}
	defer pr.close()
	start = time.Now()
	var stop *SoakStop
	if cfg.SoakAuto {
		target := cfg.soakTarget
		if target == 0 {
			target = rssTargetHalfWidth
		}
		stop = &SoakStop{Reason: SoakStopMaxSoak, MaxSeconds: cfg.Soak.Seconds(), TargetPerHour: target}
	}
	for i := 1; i <= n; i++ {
		w := min(cfg.SoakInterval, cfg.Soak-time.Since(start))
		if w < cfg.SoakInterval/2 && i > 1 {
			cfg.skipSteps(n - i + 1)
			break // the rest is too short to be a comparable row
		}
		wc := cfg
		wc.Duration = w
		_, err = s.measure(ctx, pr.sctx, wc, st, pr.callers, func(r Row) error {
			r.Scenario = SoakStep
			sr := SoakRow{SteadyRow: r, Interval: i, AtSeconds: time.Since(start).Seconds()}
			rows = append(rows, sr)
			cfg.reportStep(fmt.Sprintf("steady: %s soak %d/%d: %.0f calls/s p99 %.0f µs errors %d rss %s", s.arm, i, n, r.CallsPerS, r.P99Us, r.Errors, rssText(r.RSSBytes)))
			return record(sr)
		})
		if err != nil {
			break
		}
		if stop != nil && i >= stats.MinAutoRounds {
			if hw := rssHalfWidth(rows); hw != nil && *hw <= stop.TargetPerHour {
				stop.Reason = SoakStopPrecision
				cfg.skipSteps(n - i)
				break
			}
		}
	}
	if len(rows) > 0 {
		sum := summarizeSoak(cfg, s, rows)
		if stop != nil {
			// Counted from the rows kept (a window cut short by an error
			// may still have recorded its row), with the half-width of
			// the summary's own RSS interval.
			stop.Windows = len(rows)
			if sum.RSS.Verdict != Unknown {
				hw := (sum.RSS.Hi - sum.RSS.Lo) / 2
				stop.HalfWidthPerHour = &hw
			}
			if err != nil {
				stop.Reason = SoakStopFailed
				if ctx.Err() != nil {
					stop.Reason = SoakStopInterrupted
				}
			}
			sum.Stop = stop
		}
		if serr := summary(sum); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// rssTargetHalfWidth is the RSS slope's interval half-width at which a
// soak that stops on precision ends: half the material rate, so that the
// interval is at most one material rate wide and cannot lie on both
// sides of it by more than that.
const rssTargetHalfWidth = rssMaterialPerHour / 2

// rssHalfWidth is the half-width, in bytes/h, of the 95% interval of the
// RSS slope over rows; nil while it has none (fewer than 3 readings).
func rssHalfWidth(rows []SoakRow) *float64 {
	_, lo, hi, ok := fitTrend(rssSeries(rows))
	if !ok {
		return nil
	}
	hw := (hi - lo) / 2
	return &hw
}

// rssSeries is the rows' RSS readings (bytes) and when each was taken
// (seconds from the soak's start), leaving out rows without one.
func rssSeries(rows []SoakRow) (t, rss []float64) {
	for _, r := range rows {
		if r.RSSBytes != nil {
			t = append(t, r.AtSeconds)
			rss = append(rss, float64(*r.RSSBytes))
		}
	}
	return t, rss
}

// soakIntervals is how many windows one server's soak is cut into: the
// last may end the soak early, too short to compare.
func soakIntervals(cfg Config) int {
	return int((cfg.Soak + cfg.SoakInterval - 1) / cfg.SoakInterval)
}

func rssText(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f MiB", float64(*p)/(1<<20))
}

// Materiality: a slope counts as drift only when its whole 95% interval
// lies above these rates. RSS: 1 MiB/h (below it, a day's soak grows less
// than 24 MiB); p99: 20% of the soak's median p99 per hour.
const (
	rssMaterialPerHour = 1 << 20
	p99MaterialPerHour = 0.20
)

func summarizeSoak(cfg Config, s *server, rows []SoakRow) SoakSummary {
	sum := SoakSummary{Arm: s.arm, Budget: s.budget, RateReq: cfg.Rate, Intervals: len(rows)}
	t, rss := rssSeries(rows)
	var tp, p99 []float64
	for _, r := range rows {
		sum.Calls += r.Calls
		sum.Errors += r.Errors
		sum.Seconds = r.AtSeconds
		if r.Calls > 0 {
			tp = append(tp, r.AtSeconds)
			p99 = append(p99, r.P99Us)
		}
	}
	sum.RSS = newTrend("rss_bytes", "bytes/h", t, rss, rssMaterialPerHour, signedBytes)
	if len(rss) == 0 {
		sum.RSS.Text = "unknown: the server's process is not known (--server-pid)"
	}
	sorted := slices.Clone(p99)
	slices.Sort(sorted)
	var med float64
	if len(sorted) > 0 {
		med = sorted[len(sorted)/2]
	}
	sum.P99 = newTrend("p99_us", "µs/h", tp, p99, p99MaterialPerHour*med, signedUs)
	switch {
	case sum.RSS.Verdict == Drifting || sum.P99.Verdict == Drifting:
		sum.Verdict = Drifting
	case sum.RSS.Verdict == Unknown || sum.P99.Verdict == Unknown:
		sum.Verdict = Unknown
	default:
		sum.Verdict = Stable
	}
	return sum
}
