// SPDX-License-Identifier: Apache-2.0

package qhist

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/bpftest"
)

// BenchmarkQhistUpdate measures what one update of the quantile histogram
// (qhist.h's tp_qh_add_to: lookup, bucket index, increment) costs in BPF:
// syscall programs loop 1000 times over durations spread across the
// buckets without the update, with it, with the earlier linear layout's
// update (qh_add_linear) and with the refinement's check and bin count
// (qh_add_refine), run in turn (A B C D A B C D) in batches of 200 runs,
// with run-time statistics; each update's difference per iteration, mean
// and 95% interval over the batches (Student t). For the refinement, the
// 32 buckets below 1 ms are refined (refineAll), which hold 75% of the
// durations: a higher share than a run's windows near its quantiles.
// The same batches time the whole exact-clock accounting of a call
// (timing.h's tp_account_ns: sums, min, max, log2 histogram) without and
// with the quantile histogram and its refinement (ns_acct*).
//
//	go test -run '^$' -bench QhistUpdate -benchtime 1x ./bench/qhist/
func BenchmarkQhistUpdate(b *testing.B) {
	bpftest.Require(b) // it also raises the memlock limit
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable BPF run-time statistics: %v", err)
	}
	defer st.Close()
	var objs QhbenchObjects
	if err := LoadQhbenchObjects(&objs, nil); err != nil {
		b.Fatal(err)
	}
	defer objs.Close()
	refineAll(b, &objs)
	const loops, runs, batches = 1000, 200, 30
	perRun := func(p *ebpf.Program) float64 {
		before, err := p.Stats()
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < runs; i++ {
			if _, err := p.Run(&ebpf.RunOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		after, err := p.Stats()
		if err != nil || after.RunCount == before.RunCount {
			b.Fatalf("program statistics: %v", err)
		}
		return float64(after.Runtime-before.Runtime) / float64(after.RunCount-before.RunCount)
	}
	for n := 0; n < b.N; n++ {
		var geo, lin, extra, ref, refExtra, acct, acctQ, acctQR []float64
		var none float64
		for k := 0; k < batches; k++ {
			a := perRun(objs.QhNone)
			g := perRun(objs.QhAdd)
			l := perRun(objs.QhAddLinear)
			r := perRun(objs.QhAddRefine)
			geo, lin = append(geo, (g-a)/loops), append(lin, (l-a)/loops)
			extra = append(extra, (g-l)/loops)
			ref, refExtra = append(ref, (r-a)/loops), append(refExtra, (r-g)/loops)
			acct = append(acct, (perRun(objs.NsAcct)-a)/loops)
			acctQ = append(acctQ, (perRun(objs.NsAcctQ)-a)/loops)
			acctQR = append(acctQR, (perRun(objs.NsAcctQr)-a)/loops)
			none += a / loops / batches
		}
		for _, m := range []struct {
			name string
			d    []float64
		}{{"geometric", geo}, {"linear", lin}, {"geometric - linear", extra}, {"geometric refined", ref}, {"refined - geometric", refExtra},
			{"ns accounting", acct}, {"ns accounting with quantiles", acctQ}, {"ns accounting with refined quantiles", acctQR}} {
			r, err := estimate.MeanOfSamples(m.d, estimate.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(r.Mean, "ns/update-"+strings.ReplaceAll(m.name, " ", ""))
			b.Logf("%s: %.1f ns [%.1f, %.1f] (95%%, %d batches) per update, over a loop iteration of %.1f ns without it",
				m.name, r.Mean, r.Low, r.High, batches, none)
		}
	}
}

// refineAll refines, in half 0 of target 0, the 32 buckets below 1 ms
// (qh_dur's top: 1 us + 2^20 ns), each cut into 8 bins.
func refineAll(b *testing.B, objs *QhbenchObjects) {
	var c QhbenchTpQrCfg
	top := histogram.Index(1000 + 1<<20)
	for k := range c.S {
		i := top - k
		lo, hi := histogram.Bounds(i)
		w := max((hi-lo)/8, 1)
		c.Pos[0][i] = uint8(k + 1)
		c.S[0][k].A, c.S[0][k].Span, c.S[0][k].Mul = lo, uint32(hi-lo), uint32((1<<31)/w)
		c.S[0][k].Off, c.S[0][k].End = uint32(10*k), uint32(10*k+9)
	}
	if err := objs.TpQrCfg.Put(uint32(0), &c); err != nil {
		b.Fatal(err)
	}
}
