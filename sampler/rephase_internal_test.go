package sampler

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestRestartPeriod(t *testing.T) {
	for _, tc := range []struct {
		period float64
		span   time.Duration
		n      int64
		want   float64
	}{
		{1e6, time.Second, 0, 1e6},
		{1e6, time.Second, 100, 1e6 * 1e9 / (1e9 - 100*5e5)},
		{1e6, 0, 100, 1e6},            // no span: nominal
		{1e6, time.Second, 4000, 1e6}, // more lost than half the span: nominal, not a blow-up
	} {
		if got := restartPeriod(tc.period, tc.span, tc.n); math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("restartPeriod(%v, %v, %d) = %v, want %v", tc.period, tc.span, tc.n, got, tc.want)
		}
	}
}

// TestRestartPeriodMonteCarlo simulates a clock of period P restarted after
// waits drawn as startRephase draws them (uniform in [rephaseMin,
// rephaseMax] periods; the timer adds delay, which only spreads them
// more): after each restart it fires at r+P, r+2P, ... before the next.
// The samples times restartPeriod must give back the span. Over 20,000
// restarts the lost fraction of a period has standard deviation
// sqrt(1/12)/sqrt(20000) = 0.002 periods per restart, 0.03% of the span:
// a tolerance of 0.2% is over 6 of them (false alarms below 1e-9).
func TestRestartPeriodMonteCarlo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const P = 1001001.0
	for _, seedDelay := range []float64{0, 0.37 * P} {
		var span, samples float64
		const n = 20000
		for i := 0; i < n; i++ {
			wait := P*rephaseMin + r.Float64()*P*(rephaseMax-rephaseMin) + seedDelay*r.Float64()
			samples += math.Floor(wait / P)
			span += wait
		}
		est := samples * restartPeriod(P, time.Duration(span), n)
		if rel := math.Abs(est-span) / span; rel > 0.002 {
			t.Errorf("delay %.0f: samples x period = %.0f ns, span %.0f ns (off by %.3f%%)", seedDelay, est, span, 100*rel)
		}
	}
}
