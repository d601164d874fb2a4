package record

import (
	"testing"

	"github.com/coldstart-go/coldstart/internal/stats"
)

// TestNewVsBaselineInterval: with too few values to bound the ratio (2
// against 2 at 95%) there is no interval at all, rather than one from 0;
// with enough (8 against 8) there is one, around the ratio.
func TestNewVsBaselineInterval(t *testing.T) {
	for _, tt := range []struct {
		name   string
		a, b   []float64
		bounds bool
	}{
		{"2 against 2", []float64{20, 21}, []float64{10, 11}, false},
		{"1 against 1", []float64{20}, []float64{10}, false},
		{"8 against 8", []float64{20, 21, 22, 23, 24, 25, 26, 27}, []float64{10, 11, 12, 13, 14, 15, 16, 17}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVsBaseline("b", tt.a, tt.b, stats.LessIsFaster, stats.DefaultConfidence, stats.DefaultMinEffect)
			if v.Ratio == nil {
				t.Fatalf("NewVsBaseline(%v, %v): no ratio", tt.a, tt.b)
			}
			got := v.CILow != nil && v.CIHigh != nil
			if got != tt.bounds || (v.CILow == nil) != (v.CIHigh == nil) {
				t.Errorf("NewVsBaseline(%v, %v) interval [%v, %v], want bounded %v", tt.a, tt.b, v.CILow, v.CIHigh, tt.bounds)
			}
			if got && (*v.CILow > *v.Ratio || *v.CIHigh < *v.Ratio || *v.CILow <= 0) {
				t.Errorf("interval [%v, %v] does not hold ratio %v", *v.CILow, *v.CIHigh, *v.Ratio)
			}
		})
	}
}
