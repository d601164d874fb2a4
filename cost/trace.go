package cost

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TraceOptions say how to read a trace.
type TraceOptions struct {
	// Field is the CSV column or JSONL field holding the timestamps (""
	// = the first of timestamp, time, ts).
	Field string
	// Select picks one app ("app=HASH", its functions summed) or one
	// function ("function=HASH") of an Azure per-minute file ("" = the
	// only one there is).
	Select string
	// Seed places an Azure minute's requests in it (uniformly, seeded).
	Seed uint64
	// Duration is the traffic's length, seconds (0 = to the whole minute
	// after the last request; an Azure day file: 24 h).
	Duration float64
}

var timeFields = []string{"timestamp", "time", "ts"}

// ReadTrace reads request arrivals from r, named name in errors. It takes
// one timestamp per line (seconds as a number, or RFC 3339, made relative
// to the first), a CSV file whose header names the timestamp column, JSON
// Lines with the timestamp in a field, or the Azure Functions 2019
// per-minute layout (HashOwner,HashApp,HashFunction,Trigger,1..1440).
// Timestamps must be sorted and not negative; an error names the line.
func ReadTrace(name string, r io.Reader, o TraceOptions) (Traffic, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Traffic{}, fmt.Errorf("read %s: %w", name, err)
	}
	first := ""
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			first = l
			break
		}
	}
	var ts []stamp
	switch {
	case first == "":
		return Traffic{}, fmt.Errorf("%s: no requests in it", name)
	case strings.HasPrefix(first, "HashOwner,"):
		return readAzure(name, data, o)
	case strings.HasPrefix(first, "{"):
		ts, err = jsonlStamps(name, data, o.Field)
	case strings.Contains(first, ",") || (!isStamp(first) && o.Field != "") || (!isStamp(first) && slices.Contains(timeFields, strings.ToLower(first))):
		ts, err = csvStamps(name, data, o.Field)
	default:
		ts, err = lineStamps(name, data)
	}
	if err != nil {
		return Traffic{}, err
	}
	a, err := relative(name, ts)
	if err != nil {
		return Traffic{}, err
	}
	tr := Traffic{Name: name, Apps: [][]float64{a}, Duration: o.Duration}
	if tr.Duration == 0 {
		tr.Duration = math.Floor(a[len(a)-1]/60)*60 + 60
	}
	return tr, nil
}

// stamp is one timestamp as read: seconds, or a wall time.
type stamp struct {
	line int
	sec  float64
	wall time.Time
	text string
}

func isStamp(s string) bool { _, err := parseStamp(s, 0); return err == nil }

func parseStamp(s string, line int) (stamp, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		return stamp{line: line, sec: v, text: s}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return stamp{line: line, wall: t, text: s}, nil
	}
	return stamp{}, fmt.Errorf("%q is neither seconds nor an RFC 3339 time", s)
}

// relative turns stamps into seconds from 0 (wall times: from the first),
// refusing negative, mixed and unsorted ones.
func relative(name string, ts []stamp) ([]float64, error) {
	if len(ts) == 0 {
		return nil, fmt.Errorf("%s: no requests in it", name)
	}
	wall := !ts[0].wall.IsZero()
	out := make([]float64, len(ts))
	for i, s := range ts {
		if wall != !s.wall.IsZero() {
			return nil, fmt.Errorf("%s:%d: %s mixes seconds and RFC 3339 times (line %d has the other kind)", name, s.line, s.text, ts[0].line)
		}
		v := s.sec
		if wall {
			v = s.wall.Sub(ts[0].wall).Seconds()
		} else if v < 0 {
			return nil, fmt.Errorf("%s:%d: timestamp %s is negative", name, s.line, s.text)
		}
		if i > 0 && v < out[i-1] {
			return nil, fmt.Errorf("%s:%d: timestamp %s is before line %d's %s: the trace must be sorted", name, s.line, s.text, ts[i-1].line, ts[i-1].text)
		}
		out[i] = v
	}
	return out, nil
}

func lineStamps(name string, data []byte) ([]stamp, error) {
	var ts []stamp
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		s, err := parseStamp(l, n)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		ts = append(ts, s)
	}
	return ts, sc.Err()
}

func csvStamps(name string, data []byte, field string) ([]stamp, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: read the CSV header: %w", name, err)
	}
	col := -1
	for i, h := range header {
		h = strings.TrimSpace(h)
		if (field != "" && h == field) || (field == "" && col < 0 && slices.Contains(timeFields, strings.ToLower(h))) {
			col = i
		}
	}
	if col < 0 {
		want := field
		if want == "" {
			want = strings.Join(timeFields, ", ")
		}
		return nil, fmt.Errorf("%s:1: no timestamp column (%s) in the header %q; name it with --trace-field", name, want, strings.Join(header, ","))
	}
	var ts []stamp
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if col >= len(rec) {
			return nil, fmt.Errorf("%s:%d: no %s column in this row", name, line, header[col])
		}
		s, err := parseStamp(rec[col], line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		ts = append(ts, s)
	}
	return ts, nil
}

func jsonlStamps(name string, data []byte, field string) ([]stamp, error) {
	var ts []stamp
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l, &m); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object: %v", name, n, err)
		}
		keys := timeFields
		if field != "" {
			keys = []string{field}
		}
		var raw json.RawMessage
		for _, k := range keys {
			if v, ok := m[k]; ok {
				raw = v
				break
			}
		}
		if raw == nil {
			return nil, fmt.Errorf("%s:%d: no %s field; name it with --trace-field", name, n, strings.Join(keys, " or "))
		}
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			text = string(raw) // a number
		}
		s, err := parseStamp(text, n)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		ts = append(ts, s)
	}
	return ts, sc.Err()
}

// azureMinutes is the Azure Functions 2019 trace's columns per day.
const azureMinutes = 1440

// readAzure reads the Azure Functions 2019 invocations-per-function
// layout: one row per function and day, HashOwner, HashApp, HashFunction,
// Trigger, then the invocations in each of the day's 1440 minutes. The
// requests of a minute are placed uniformly in it.
func readAzure(name string, data []byte, o TraceOptions) (Traffic, error) {
	key, hash, _ := strings.Cut(o.Select, "=")
	if o.Select != "" && (hash == "" || (key != "app" && key != "function")) {
		return Traffic{}, fmt.Errorf("%s: select %q: want app=HASH or function=HASH", name, o.Select)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	header, err := cr.Read()
	if err != nil {
		return Traffic{}, fmt.Errorf("%s: read the CSV header: %w", name, err)
	}
	if len(header) != 4+azureMinutes {
		return Traffic{}, fmt.Errorf("%s:1: %d columns, want HashOwner,HashApp,HashFunction,Trigger and 1..%d (%d)", name, len(header), azureMinutes, 4+azureMinutes)
	}
	counts := make([]int, azureMinutes)
	apps := map[string]bool{}
	matched := 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Traffic{}, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		apps[rec[1]] = true
		if (key == "app" && rec[1] != hash) || (key == "function" && rec[2] != hash) {
			continue
		}
		matched++
		for m := range azureMinutes {
			c, err := strconv.Atoi(rec[4+m])
			if err != nil || c < 0 {
				return Traffic{}, fmt.Errorf("%s:%d: minute %d: %q is not a count of invocations", name, line, m+1, rec[4+m])
			}
			counts[m] += c
		}
	}
	switch {
	case o.Select == "" && len(apps) > 1:
		return Traffic{}, fmt.Errorf("%s: %d apps in it: pick one with --trace-select app=HASH or function=HASH", name, len(apps))
	case matched == 0 && o.Select != "":
		return Traffic{}, fmt.Errorf("%s: no row with %s", name, o.Select)
	case matched == 0:
		return Traffic{}, fmt.Errorf("%s: no rows", name)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x617a75))
	var a []float64
	for m, c := range counts {
		start := len(a)
		for range c {
			a = append(a, float64(m)*60+rng.Float64()*60)
		}
		slices.Sort(a[start:])
	}
	tr := Traffic{Name: name, Apps: [][]float64{a}, Duration: o.Duration}
	if tr.Duration == 0 {
		tr.Duration = azureMinutes * 60
	}
	return tr, nil
}
