package agg

import (
	"math"

	"github.com/parsecdb/parsec/engine/expr"
	"github.com/parsecdb/parsec/engine/langerr"
	"github.com/parsecdb/parsec/engine/value"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// granularity rounds $bucketAuto boundaries to a preferred-number
// series (Renard, E, 1-2-5) or to powers of two.
type granularity struct {
	name     string
	series   []float64 // one decade, normalized to [1, 10)
	powersOf bool
}

var preferredSeries = map[string][]float64{
	"R5":  {10, 16, 25, 40, 63},
	"R10": {10, 12.5, 16, 20, 25, 31.5, 40, 50, 63, 80},
	"R20": {10, 11.2, 12.5, 14, 16, 18, 20, 22.4, 25, 28, 31.5, 35.5, 40, 45, 50, 56, 63, 71, 80, 90},
	"R40": {10, 10.6, 11.2, 11.8, 12.5, 13.2, 14, 15, 16, 17, 18, 19, 20, 21.2, 22.4, 23.6, 25, 26.5, 28, 30, 31.5,
		33.5, 35.5, 37.5, 40, 42.5, 45, 47.5, 50, 53, 56, 60, 63, 67, 71, 75, 80, 85, 90, 95},
	"R80": {10, 10.3, 10.6, 10.9, 11.2, 11.5, 11.8, 12.2, 12.5, 12.8, 13.2, 13.6, 14, 14.5, 15, 15.5, 16, 16.5, 17,
		17.5, 18, 18.5, 19, 19.5, 20, 20.6, 21.2, 21.8, 22.4, 23, 23.6, 24.3, 25, 25.8, 26.5, 27.2, 28, 29, 30, 30.7,
		31.5, 32.5, 33.5, 34.5, 35.5, 36.5, 37.5, 38.7, 40, 41.2, 42.5, 43.7, 45, 46.2, 47.5, 48.7, 50, 51.5, 53, 54.5,
		56, 58, 60, 61.5, 63, 65, 67, 69, 71, 73, 75, 77.5, 80, 82.5, 85, 87.5, 90, 92.5, 95, 97.5},
	"1-2-5": {10, 20, 50},
	"E6":    {10, 15, 22, 33, 47, 68},
	"E12":   {10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82},
	"E24":   {10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91},
	"E48": {100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249, 261,
		274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649, 681, 715, 750,
		787, 825, 866, 909, 953},
	"E96": {100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158, 162,
		165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255, 261, 267, 274,
		280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412, 422, 432, 442, 453, 464,
		475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665, 681, 698, 715, 732, 750, 768, 787,
		806, 825, 845, 866, 887, 909, 931, 953, 976},
}

func newGranularity(name string) (*granularity, error) {
	if name == "POWERSOF2" {
		return &granularity{name: name, powersOf: true}, nil
	}
	s, ok := preferredSeries[name]
	if !ok {
		if name == "E192" {
			return nil, langerr.New(langerr.ErrNotImplemented, "$bucketAuto granularity E192 is not supported by Parsec")
		}
		return nil, langerr.New(ErrBucketAutoSpec, "Unknown rounding granularity '%s'", name)
	}
	scale := s[0]
	norm := make([]float64, len(s))
	for i, x := range s {
		norm[i] = x / scale
	}
	return &granularity{name: name, series: norm}, nil
}

// roundUp is the smallest series value greater than v.
func (g *granularity) roundUp(v bsoncore.Value) bsoncore.Value { return g.round(v, true) }

// roundDown is the largest series value less than v.
func (g *granularity) roundDown(v bsoncore.Value) bsoncore.Value { return g.round(v, false) }

func (g *granularity) round(v bsoncore.Value, up bool) bsoncore.Value {
	x := value.Float(v)
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return v
	}
	if g.powersOf {
		e := math.Floor(math.Log2(x))
		p := math.Exp2(e)
		var r float64
		if up {
			r = p * 2
			if p > x {
				r = p
			}
		} else {
			r = p
			if p >= x {
				r = p / 2
			}
		}
		if (v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64) && r >= 1 && r == math.Trunc(r) {
			if r <= math.MaxInt32 && v.Type == bsoncore.TypeInt32 {
				return expr.Int32(int32(r))
			}
			return expr.Int64(int64(r))
		}
		return expr.Double(r)
	}
	exp := math.Floor(math.Log10(x))
	scale := math.Pow(10, exp)
	m := x / scale
	// Guard against m landing just under 1 or at 10 from rounding.
	if m < 1 {
		scale /= 10
		m = x / scale
	} else if m >= 10 {
		scale *= 10
		m = x / scale
	}
	if up {
		for _, s := range g.series {
			if s > m && !closeTo(s, m) {
				return expr.Double(s * scale)
			}
		}
		return expr.Double(10 * scale)
	}
	for i := len(g.series) - 1; i >= 0; i-- {
		if s := g.series[i]; s < m && !closeTo(s, m) {
			return expr.Double(s * scale)
		}
	}
	return expr.Double(g.series[len(g.series)-1] * scale / 10)
}

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }
