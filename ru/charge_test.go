package ru

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"testing/quick"

	"github.com/cockroachdb/datadriven"
)

// TestCharge replays testdata/charge. Directive:
//
//	charge
//	<kind> [read=<size>] [written=<size>] [examined=<n>] [returned=<n>]
//	       [index=<n>] [index-bytes=<size>] [partitions=<n>] [strong]
//	       [published=<RU>]
//	...
//	----
//	<the line without published=> -> <charge> RU [(published <RU>, <±%>)]
//
// Sizes are bytes or <n>KB / <n>MB (1 KB = 1024 bytes). A line with
// published= must be within ±10% of the published figure: the test fails
// otherwise, whatever the expected output says.
func TestCharge(t *testing.T) {
	datadriven.RunTest(t, "testdata/charge", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "charge" {
			d.Fatalf(t, "unknown directive %q", d.Cmd)
		}
		var out strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			u, published, desc, err := parseUsage(line)
			if err != nil {
				d.Fatalf(t, "%s: %v", line, err)
			}
			got := Charge(u)
			fmt.Fprintf(&out, "%s -> %.2f RU", desc, got)
			if published > 0 {
				dev := (got - published) / published * 100
				fmt.Fprintf(&out, " (published %g, %+.1f%%)", published, dev)
				if math.Abs(dev) > 10 {
					t.Errorf("%s: %.2f RU is %+.1f%% off the published %g RU (allowed ±10%%)", d.Pos, got, dev, published)
				}
			}
			out.WriteByte('\n')
		}
		return out.String()
	})
}

func parseUsage(line string) (u Usage, published float64, desc string, err error) {
	fields := strings.Fields(line)
	kinds := map[string]Kind{}
	for k := KindCommand; k <= KindDelete; k++ {
		kinds[k.String()] = k
	}
	k, ok := kinds[fields[0]]
	if !ok {
		return u, 0, "", fmt.Errorf("unknown kind %q", fields[0])
	}
	u.Kind = k
	kept := fields[:1]
	for _, f := range fields[1:] {
		key, val, _ := strings.Cut(f, "=")
		var n int64
		switch key {
		case "strong":
			u.Consistency = ConsistencyStrong
		case "published":
			published, err = strconv.ParseFloat(val, 64)
			if err != nil {
				return u, 0, "", err
			}
			continue
		case "read", "written", "index-bytes":
			n, err = parseSize(val)
		case "examined", "returned", "index", "partitions":
			n, err = strconv.ParseInt(val, 10, 64)
		default:
			return u, 0, "", fmt.Errorf("unknown field %q", key)
		}
		if err != nil {
			return u, 0, "", err
		}
		switch key {
		case "read":
			u.BytesRead = n
		case "written":
			u.BytesWritten = n
		case "index-bytes":
			u.IndexBytes = n
		case "examined":
			u.DocsExamined = n
		case "returned":
			u.DocsReturned = n
		case "index":
			u.IndexEntries = n
		case "partitions":
			u.Partitions = int(n)
		}
		kept = append(kept, f)
	}
	return u, published, strings.Join(kept, " "), nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "KB"):
		mult, s = 1<<10, strings.TrimSuffix(s, "KB")
	case strings.HasSuffix(s, "MB"):
		mult, s = 1<<20, strings.TrimSuffix(s, "MB")
	}
	n, err := strconv.ParseFloat(s, 64)
	return int64(n * float64(mult)), err
}

// randomUsage is a random but plausible Usage for the shape properties.
func randomUsage(seed []uint32) Usage {
	at := func(i int) int64 {
		if i < len(seed) {
			return int64(seed[i])
		}
		return 0
	}
	return Usage{
		BytesRead:    at(0) % (4 << 20),
		BytesWritten: at(1) % (2 << 20),
		DocsExamined: at(2) % 100000,
		DocsReturned: at(3) % 100000,
		IndexEntries: at(4) % 64,
		IndexBytes:   at(5) % 8192,
		Partitions:   int(at(6)%64) + 1,
	}
}

// quickConfig runs n cases from a fixed seed, so that every run checks the
// same cases and a failure reproduces.
func quickConfig(n int) *quick.Config {
	return &quick.Config{MaxCount: n, Rand: rand.New(rand.NewSource(int64(n)))}
}

// TestChargeShape checks the properties the published figures imply, over
// random usages.
func TestChargeShape(t *testing.T) {
	t.Run("monotonic in every counter", func(t *testing.T) {
		f := func(seed []uint32, kind uint8, field uint8, delta uint16) bool {
			u := randomUsage(seed)
			u.Kind = Kind(kind % uint8(KindDelete+1))
			v := u
			d := int64(delta)
			switch field % 7 {
			case 0:
				v.BytesRead += d
			case 1:
				v.BytesWritten += d
			case 2:
				v.DocsExamined += d
			case 3:
				v.DocsReturned += d
			case 4:
				v.IndexEntries += d
			case 5:
				v.IndexBytes += d
			case 6:
				v.Partitions += int(d)
			}
			return Charge(v) >= Charge(u)
		}
		if err := quick.Check(f, quickConfig(2000)); err != nil {
			t.Error(err)
		}
	})
	t.Run("strictly increasing in item size", func(t *testing.T) {
		for _, k := range []Kind{KindPointRead, KindInsert, KindReplace, KindDelete} {
			prev := 0.0
			for kb := int64(1); kb <= 2048; kb *= 2 {
				u := Usage{Kind: k, BytesRead: (kb + 1) << 10, BytesWritten: (kb + 1) << 10}
				if c := Charge(u); c <= prev {
					t.Errorf("%v of %d KB costs %.2f, not more than %.2f for half the size", k, kb+1, c, prev)
				} else {
					prev = c
				}
			}
		}
	})
	// Rounding to two decimals may separate a product from the product of
	// rounded charges by one hundredth.
	const rounding = 0.01 + 1e-9
	t.Run("replace is twice insert", func(t *testing.T) {
		f := func(seed []uint32) bool {
			u := randomUsage(seed)
			u.Kind = KindInsert
			ins := Charge(u)
			u.Kind = KindReplace
			rep := Charge(u)
			u.Kind, u.DocsExamined = KindUpsert, 1
			ups := Charge(u)
			return math.Abs(rep-2*ins) <= rounding && ups == rep
		}
		if err := quick.Check(f, quickConfig(2000)); err != nil {
			t.Error(err)
		}
	})
	t.Run("upsert that inserts and delete cost an insert", func(t *testing.T) {
		f := func(seed []uint32) bool {
			u := randomUsage(seed)
			u.Kind = KindInsert
			ins := Charge(u)
			u.Kind, u.DocsExamined = KindUpsert, 0
			ups := Charge(u)
			u.Kind = KindDelete
			return ups == ins && Charge(u) == ins
		}
		if err := quick.Check(f, quickConfig(2000)); err != nil {
			t.Error(err)
		}
	})
	t.Run("strong reads cost twice, writes the same", func(t *testing.T) {
		f := func(seed []uint32, kind uint8) bool {
			u := randomUsage(seed)
			u.Kind = Kind(kind % uint8(KindDelete+1))
			weak := Charge(u)
			u.Consistency = ConsistencyStrong
			strong := Charge(u)
			if u.Kind == KindPointRead || u.Kind == KindQuery {
				return math.Abs(strong-2*weak) <= rounding
			}
			return strong == weak
		}
		if err := quick.Check(f, quickConfig(2000)); err != nil {
			t.Error(err)
		}
	})
	t.Run("each extra partition adds 2 to 3 RU to a query", func(t *testing.T) {
		f := func(seed []uint32) bool {
			u := randomUsage(seed)
			u.Kind = KindQuery
			one := Charge(u)
			u.Partitions++
			extra := Charge(u) - one
			return extra >= 2-rounding && extra <= 3+rounding
		}
		if err := quick.Check(f, quickConfig(2000)); err != nil {
			t.Error(err)
		}
	})
	t.Run("deterministic and two decimals", func(t *testing.T) {
		f := func(seed []uint32, kind uint8, strong bool) bool {
			u := randomUsage(seed)
			u.Kind = Kind(kind % uint8(KindDelete+1))
			if strong {
				u.Consistency = ConsistencyStrong
			}
			c := Charge(u)
			m := DefaultModel()
			return c == Charge(u) && c == m.Charge(u) && c == Round(c) && c > 0
		}
		if err := quick.Check(f, quickConfig(2000)); err != nil {
			t.Error(err)
		}
	})
	t.Run("negative counters count as zero", func(t *testing.T) {
		for k := KindCommand; k <= KindDelete; k++ {
			neg := Usage{Kind: k, BytesRead: -5, BytesWritten: -5, DocsExamined: -1, DocsReturned: -1, IndexEntries: -1, IndexBytes: -1, Partitions: -3}
			if got, want := Charge(neg), Charge(Usage{Kind: k}); got != want {
				t.Errorf("%v: negative counters cost %.2f, zero %.2f", k, got, want)
			}
		}
	})
}

func TestRound(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{1.004, 1}, {1.006, 1.01}, {5.4545, 5.45}, {0, 0}, {1002.5, 1002.5}, {0.125, 0.13}, {-0.125, -0.13},
	} {
		if got := Round(c.in); got != c.want {
			t.Errorf("Round(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

var sink float64

func BenchmarkCharge(b *testing.B) {
	for _, c := range []struct {
		name string
		u    Usage
	}{
		{"point-read", Usage{Kind: KindPointRead, BytesRead: 1024}},
		{"insert", Usage{Kind: KindInsert, BytesWritten: 1024, IndexEntries: 1, IndexBytes: 40}},
		{"query", Usage{Kind: KindQuery, BytesRead: 1 << 20, DocsExamined: 1000, DocsReturned: 1000, Partitions: 4, Consistency: ConsistencyStrong}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink += Charge(c.u)
			}
		})
	}
}
