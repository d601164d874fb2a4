package pull

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// Bandwidth is a link speed in bits per second; 0 means no cap ("max").
type Bandwidth int64

// Max is no bandwidth cap: the loopback's own speed.
const Max Bandwidth = 0

var bandwidthUnits = []struct {
	suffix string
	bits   int64
}{
	{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
}

// ParseBandwidth reads "10Mbit", "100mbit", "1Gbit", "2.5Gbit", "500kbit"
// (decimal units, bits per second, as links are sold) or "max" (no cap).
func ParseBandwidth(s string) (Bandwidth, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "max" {
		return Max, nil
	}
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "ps")
	for _, u := range bandwidthUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil {
			return 0, fmt.Errorf("bandwidth %q: want a number and a unit, like 10Mbit, 1Gbit, or max", s)
		}
		if v <= 0 {
			return 0, fmt.Errorf("bandwidth %q: must be more than 0 (use max for no cap)", s)
		}
		bits := v * float64(u.bits)
		if bits < 8e3 {
			return 0, fmt.Errorf("bandwidth %q: below 8kbit, a pull would take hours", s)
		}
		return Bandwidth(bits), nil
	}
	return 0, fmt.Errorf("bandwidth %q: want a number and a unit (kbit, Mbit, Gbit), like 10Mbit, or max", s)
}

// ParseBandwidths reads a comma-separated list of ParseBandwidth values.
func ParseBandwidths(s string) ([]Bandwidth, error) {
	var out []Bandwidth
	seen := map[Bandwidth]bool{}
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		b, err := ParseBandwidth(f)
		if err != nil {
			return nil, err
		}
		if !seen[b] {
			out = append(out, b)
			seen[b] = true
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no bandwidth given (want a list like 10Mbit,100Mbit,1Gbit,max)")
	}
	return out, nil
}

// BytesPerSecond is the cap in bytes per second (0 = no cap).
func (b Bandwidth) BytesPerSecond() float64 { return float64(b) / 8 }

// String is the shortest form ParseBandwidth reads back: "10Mbit", "max".
func (b Bandwidth) String() string {
	if b == Max {
		return "max"
	}
	for _, u := range bandwidthUnits {
		if int64(b) >= u.bits && int64(b)%u.bits == 0 {
			return strconv.FormatInt(int64(b)/u.bits, 10) + map[string]string{"gbit": "Gbit", "mbit": "Mbit", "kbit": "kbit", "bit": "bit"}[u.suffix]
		}
	}
	return strconv.FormatInt(int64(b), 10) + "bit"
}

// ParseCompressions reads a comma-separated list of compressions.
func ParseCompressions(s string) ([]record.Compression, error) {
	var out []record.Compression
	seen := map[record.Compression]bool{}
	for _, f := range strings.Split(s, ",") {
		c := record.Compression(strings.ToLower(strings.TrimSpace(f)))
		if c == "" {
			continue
		}
		if c != record.Gzip && c != record.Zstd {
			return nil, fmt.Errorf("unknown compression %q (known: gzip, zstd)", f)
		}
		if !seen[c] {
			out = append(out, c)
			seen[c] = true
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no compression given (known: gzip, zstd)")
	}
	return out, nil
}

// ParseLayerings reads a comma-separated list of layerings.
func ParseLayerings(s string) ([]record.Layering, error) {
	var out []record.Layering
	seen := map[record.Layering]bool{}
	for _, f := range strings.Split(s, ",") {
		l := record.Layering(strings.ToLower(strings.TrimSpace(f)))
		if l == "" {
			continue
		}
		if l != record.SingleLayer && l != record.SplitLayers {
			return nil, fmt.Errorf("unknown layering %q (known: single, split)", f)
		}
		if !seen[l] {
			out = append(out, l)
			seen[l] = true
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no layering given (known: single, split)")
	}
	return out, nil
}
