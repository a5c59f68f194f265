package ru

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"testing/quick"
	"time"

	"github.com/cockroachdb/datadriven"
)

// t0 is the fake clock's origin; tests give times as offsets from it.
var t0 = time.Date(2024, 1, 2, 3, 4, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// TestBucket replays testdata/bucket. Directives (t= is an offset from the
// fake clock's origin, a Go duration):
//
//	new rate=<RU/s> burst=<RU>       a full bucket at t=0
//	take t=<d> ru=<RU>               TryTake: ok | throttled retry-after=<d>
//	force t=<d> ru=<RU>              Take
//	set-rate t=<d> rate=<RU/s> burst=<RU>
//	balance t=<d>
//
// Every directive prints the balance at its time afterwards.
func TestBucket(t *testing.T) {
	var b *Bucket
	datadriven.RunTest(t, "testdata/bucket", func(t *testing.T, d *datadriven.TestData) string {
		args := map[string]string{}
		for _, a := range d.CmdArgs {
			if len(a.Vals) > 0 {
				args[a.Key] = a.Vals[0]
			}
		}
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(args[k], 64)
			if err != nil {
				d.Fatalf(t, "%s: %v", k, err)
			}
			return v
		}
		now := t0
		if s, ok := args["t"]; ok {
			dur, err := time.ParseDuration(s)
			if err != nil {
				d.Fatalf(t, "t: %v", err)
			}
			now = at(dur)
		}
		var out string
		switch d.Cmd {
		case "new":
			b = NewBucket(now, num("rate"), num("burst"))
		case "take":
			ok, after := b.TryTake(now, num("ru"))
			if ok {
				out = "ok "
			} else if after == Never {
				out = "throttled retry-after=never "
			} else {
				out = fmt.Sprintf("throttled retry-after=%v ", after)
			}
		case "force":
			b.Take(now, num("ru"))
		case "set-rate":
			b.SetRate(now, num("rate"), num("burst"))
		case "balance":
		default:
			d.Fatalf(t, "unknown directive %q", d.Cmd)
		}
		return out + fmt.Sprintf("balance=%.2f\n", b.Balance(now))
	})
}

// refBucket is the naive reference: exact integer arithmetic in nano-RU
// (RU × 10⁹) and nanoseconds, so that r RU/s refills exactly r nano-RU per
// nanosecond, written straight from the rules in Bucket's documentation.
type refBucket struct {
	rate, burst int64 // RU/s, RU
	tokens      int64 // nano-RU
	last        int64 // ns
}

const nano = 1_000_000_000

func (r *refBucket) balance(now int64) int64 {
	t := r.tokens
	if now > r.last {
		t += r.rate * (now - r.last)
	}
	return min(t, max(r.burst*nano, r.tokens))
}

// tryTake returns ok and the retry-after, and the margin: how far the
// balance was from the amount needed, in nano-RU.
func (r *refBucket) tryTake(now, ru int64) (ok bool, after time.Duration, margin int64) {
	need := min(ru, r.burst) * nano
	bal := r.balance(now)
	margin = bal - need
	if bal >= need {
		r.tokens = bal - ru*nano
		r.last = max(r.last, now)
		return true, 0, margin
	}
	deficit := need - bal
	return false, time.Duration((deficit + r.rate - 1) / r.rate), margin
}

func (r *refBucket) take(now, ru int64) {
	r.tokens = r.balance(now) - ru*nano
	r.last = max(r.last, now)
}

// bucketStep is one random call.
type bucketStep struct {
	dt    int64 // ns since the previous step; may be negative
	ru    int64
	force bool
}

// TestBucketMatchesReference drives Bucket and the exact reference with the
// same random sequences: every decision must agree, and retry-afters must
// agree within a microsecond. When the reference's balance is within a
// thousandth of an RU of the amount needed, floating point may decide
// either way; the test then follows Bucket's decision in both.
func TestBucketMatchesReference(t *testing.T) {
	var paid, refused, oversized, ties int
	f := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		rate := int64(1 + rng.IntN(20000))
		burst := rate * int64(1+rng.IntN(3))
		b := NewBucket(at(0), float64(rate), float64(burst))
		ref := &refBucket{rate: rate, burst: burst, tokens: burst * nano}
		var now int64
		for i := range 200 {
			s := bucketStep{dt: rng.Int64N(int64(2 * float64(burst) / float64(rate) * nano / 10)), ru: rng.Int64N(burst/4 + 2)}
			switch rng.IntN(20) {
			case 0:
				s.dt = -rng.Int64N(nano) // the clock goes back
			case 1:
				s.ru = burst + rng.Int64N(2*burst+1) // oversized
				if rng.IntN(2) == 0 {
					s.dt = rng.Int64N(4 * burst / rate * nano)
				}
			case 2:
				s.ru = 0 // admission
			case 3:
				s.force = true
			}
			now += s.dt
			tm := at(time.Duration(now))
			if s.force {
				b.Take(tm, float64(s.ru))
				ref.take(now, s.ru)
				continue
			}
			ok, after := b.TryTake(tm, float64(s.ru))
			snapshot := *ref
			rok, rafter, margin := ref.tryTake(now, s.ru)
			if ok != rok {
				if abs(margin) <= nano/1000 {
					ties++
					*ref = snapshot
					if ok {
						ref.take(now, s.ru)
					}
					continue
				}
				t.Logf("seed %d step %d: rate %d burst %d t=%dns ru %d: bucket ok=%v, reference ok=%v (margin %d nRU)",
					seed, i, rate, burst, now, s.ru, ok, rok, margin)
				return false
			}
			switch {
			case ok && s.ru > burst:
				oversized++
			case ok:
				paid++
			default:
				refused++
			}
			if !ok && absDur(after-rafter) > time.Microsecond {
				t.Logf("seed %d step %d: retry-after %v, reference %v", seed, i, after, rafter)
				return false
			}
			if got, want := b.Balance(tm), float64(ref.balance(now))/nano; math.Abs(got-want) > 1e-3 {
				t.Logf("seed %d step %d: balance %v, reference %v", seed, i, got, want)
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, quickConfig(500)); err != nil {
		t.Fatal(err)
	}
	t.Logf("paid %d, refused %d, oversized paid %d, ties %d", paid, refused, oversized, ties)
	if paid < 1000 || refused < 1000 || oversized < 200 || ties > paid/100 {
		t.Errorf("the random sequences do not exercise the bucket: paid %d, refused %d, oversized paid %d, ties %d", paid, refused, oversized, ties)
	}
}

// TestBucketRetryAfterSuffices: a refused charge is paid when retried after
// its retry-after, and not a nanosecond-scale moment before.
func TestBucketRetryAfterSuffices(t *testing.T) {
	f := func(rate16 uint16, burstSecs uint8, spend, charge uint32) bool {
		rate := float64(rate16%10000) + 1
		burst := rate * float64(burstSecs%4+1)
		b := NewBucket(at(0), rate, burst)
		b.Take(at(0), float64(spend%uint32(3*burst+1)))
		ru := float64(charge%uint32(2*burst+1)) + 0.01
		ok, after := b.TryTake(at(0), ru)
		if ok {
			return after == 0
		}
		probe := *b
		if early := after - after/100 - time.Microsecond; early > 0 {
			if ok, _ := probe.TryTake(at(early), ru); ok {
				t.Logf("rate %v burst %v ru %v: paid at %v, before retry-after %v", rate, burst, ru, early, after)
				return false
			}
		}
		ok, again := b.TryTake(at(after), ru)
		if !ok {
			t.Logf("rate %v burst %v ru %v: refused again at retry-after %v (then %v)", rate, burst, ru, after, again)
		}
		return ok
	}
	if err := quick.Check(f, quickConfig(5000)); err != nil {
		t.Fatal(err)
	}
}

func TestBucketEdges(t *testing.T) {
	t.Run("zero rate never pays", func(t *testing.T) {
		b := NewBucket(at(0), 0, 100)
		if ok, after := b.TryTake(at(time.Hour), 1); ok || after != Never {
			t.Errorf("TryTake = %v, %v; want refused, Never", ok, after)
		}
		if ok, _ := b.TryTake(at(time.Hour), 0); !ok {
			t.Error("admission refused on a non-negative balance")
		}
	})
	t.Run("bad charges count as zero", func(t *testing.T) {
		b := NewBucket(at(0), 100, 100)
		for _, ru := range []float64{-5, math.NaN(), math.Inf(1), math.Inf(-1)} {
			if ok, _ := b.TryTake(at(0), ru); !ok {
				t.Errorf("TryTake(%v) refused", ru)
			}
			b.Take(at(0), ru)
		}
		if got := b.Balance(at(0)); got != 100 {
			t.Errorf("balance %v after bad charges, want 100", got)
		}
	})
	t.Run("refusal changes nothing", func(t *testing.T) {
		b := NewBucket(at(0), 100, 100)
		b.Take(at(0), 150)
		before := *b
		for i := range 10 {
			if ok, _ := b.TryTake(at(time.Duration(i)*time.Millisecond), 1); ok {
				t.Fatal("paid from a negative balance")
			}
		}
		if *b != before {
			t.Errorf("refusals changed the bucket: %+v, was %+v", *b, before)
		}
	})
	t.Run("a distant clock does not overflow", func(t *testing.T) {
		b := NewBucket(time.Time{}, 1e4, 1e4)
		b.Take(time.Time{}, 5e4)
		if got := b.Balance(at(0)); got != 1e4 {
			t.Errorf("balance %v after centuries, want full", got)
		}
	})
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func BenchmarkTryTake(b *testing.B) {
	b.Run("ok", func(b *testing.B) {
		bk := NewBucket(at(0), 1e9, 1e9) // refills faster than the loop spends
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			bk.TryTake(at(time.Duration(i)), 5.5)
		}
	})
	b.Run("throttled", func(b *testing.B) {
		bk := NewBucket(at(0), 400, 400)
		bk.Take(at(0), 1e6)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			bk.TryTake(at(time.Duration(i)), 5.5)
		}
	})
}
