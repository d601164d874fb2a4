package builds

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrNotProfile is returned for a PGO profile that is not a pprof CPU
// profile.
var ErrNotProfile = errors.New("not a pprof profile")

// ProfileCollector runs bin (the default arm built with the debug hook,
// see Options.Instrument) under load and fetches a secs-long CPU profile
// from its debug listener, writing each command it spawns to log (nil =
// nowhere). It returns the profile and a note of how it was collected.
type ProfileCollector func(ctx context.Context, bin Artifact, secs int, log io.Writer) ([]byte, ProfileNote, error)

// profileInfo is the profile the pgo arm builds with.
type profileInfo struct {
	Path   string
	SHA256 string
	Note   string // the collection note beside a collected profile ("" = given)
	Load   string // what it was collected under (Artifact.ProfileLoad)
}

// ProfileNote records how coldstart collected a PGO profile. It is written
// as profile.json beside the profile.
type ProfileNote struct {
	CollectedAt string  `json:"collected_at"` // RFC 3339, UTC
	DurationS   float64 `json:"duration_s"`   // profile length
	Server      string  `json:"server"`       // the binary profiled
	Package     string  `json:"package"`
	Arm         string  `json:"arm"`  // what it was built as
	Load        string  `json:"load"` // what the load was
	// LoadKind is the kind of load: "echo", "health" (the server has no
	// Echo), "call" (the user's method, Method) or "command" (the
	// user's command, Command, its secrets redacted).
	LoadKind string `json:"load_kind"`
	Method   string `json:"method,omitempty"`
	Command  string `json:"command,omitempty"`
	// ServerArgs are the server's argument template, as given (secret
	// values redacted); Dir its working directory ("" = coldstart's).
	ServerArgs []string `json:"server_args,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	Calls      int64    `json:"calls"`
	CallsPerS  float64  `json:"calls_per_s"`
	Errors     int64    `json:"errors"`
	GoVersion  string   `json:"go_version"`
	Endpoint   string   `json:"endpoint"` // where the profile was fetched
}

// profile is the pgo arm's profile: Options.PGOProfile checked, or one
// collected (memoized per call; reused across runs from the cache).
func (o Options) profile(ctx context.Context, src Source) (*profileInfo, error) {
	o.sh.mu.Lock()
	p := o.sh.profile
	o.sh.mu.Unlock()
	if p != nil {
		return p, nil
	}
	var err error
	if o.PGOProfile != "" {
		p, err = givenProfile(o.PGOProfile)
	} else {
		p, err = o.collectedProfile(ctx, src)
	}
	if err != nil {
		return nil, err
	}
	o.sh.mu.Lock()
	o.sh.profile = p
	o.sh.mu.Unlock()
	return p, nil
}

func givenProfile(path string) (*profileInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("pgo profile %s: %w", path, err)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("pgo profile %s: %w", path, err)
	}
	if err := CheckProfile(b); err != nil {
		return nil, fmt.Errorf("pgo profile %s: %w", path, err)
	}
	return &profileInfo{Path: abs, SHA256: hex.EncodeToString(sha256Bytes(b)), Load: "given file " + abs}, nil
}

// CheckProfile reports whether b is a pprof profile (gzipped or not) that
// has samples: a well-formed perftools.profiles.Profile protobuf with a
// sample type, samples and a string table starting with "".
func CheckProfile(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty file", ErrNotProfile)
	}
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNotProfile, err)
		}
		if b, err = io.ReadAll(io.LimitReader(zr, 1<<30)); err != nil {
			return fmt.Errorf("%w: gunzip: %v", ErrNotProfile, err)
		}
	}
	var sampleTypes, samples, strs int
	firstStr := true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: bad protobuf tag", ErrNotProfile)
		}
		b = b[n:]
		// Profile's fields 1-6 and 11 (messages, strings) are
		// length-delimited; 7-10, 12, 14 and 15 are varints; 13 is packed.
		want := protowire.VarintType
		switch num {
		case 1, 2, 3, 4, 5, 6, 11, 13:
			want = protowire.BytesType
		}
		if num == 13 && typ == protowire.VarintType { // unpacked default_sample_type
			want = protowire.VarintType
		}
		if typ != want || num < 1 || num > 15 {
			return fmt.Errorf("%w: unexpected field %d (wire type %d)", ErrNotProfile, num, typ)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("%w: truncated field %d", ErrNotProfile, num)
		}
		switch num {
		case 1:
			sampleTypes++
		case 2:
			samples++
		case 6:
			if firstStr {
				if v, _ := protowire.ConsumeBytes(b); len(v) != 0 {
					return fmt.Errorf("%w: string table does not start with \"\"", ErrNotProfile)
				}
				firstStr = false
			}
			strs++
		}
		b = b[n:]
	}
	switch {
	case sampleTypes == 0 || strs == 0:
		return fmt.Errorf("%w: no sample types or string table", ErrNotProfile)
	case samples == 0:
		return fmt.Errorf("%w: profile has no samples", ErrNotProfile)
	}
	return nil
}

// collectedProfile reuses the profile collected for the same sources,
// duration and load (ProfileLoad), or collects one: the default arm, built with the debug hook,
// runs under load from our own client while its CPU profile is fetched.
func (o Options) collectedProfile(ctx context.Context, src Source) (*profileInfo, error) {
	col := &goBuild{arm: "default", instrument: true, o: o}
	in, err := col.inputs(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("collect pgo profile: %w", err)
	}
	secs := int((o.PGODuration + time.Second - 1) / time.Second)
	load := o.ProfileLoad
	if load == "" {
		load = "Echo calls (health checks without Echo)"
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%sprofile seconds %d\nload v2 %s\n", in, secs, load))
	dir := filepath.Join(o.CacheDir, "profiles", hex.EncodeToString(sum[:16]))
	pf, nf := filepath.Join(dir, "default.pgo"), filepath.Join(dir, "profile.json")
	if b, err := os.ReadFile(pf); err == nil && CheckProfile(b) == nil {
		if _, err := os.Stat(nf); err == nil {
			o.progress("pgo: reusing the profile collected earlier under %s: %s", load, pf)
			return &profileInfo{Path: pf, SHA256: hex.EncodeToString(sha256Bytes(b)), Note: nf, Load: noteLoad(nf, load)}, nil
		}
	}
	if o.CollectProfile == nil {
		return nil, fmt.Errorf("collect pgo profile: no profile collector here; give a profile (--pgo-profile FILE)")
	}
	bin, err := Cached(col, o).Build(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("collect pgo profile: %w", err)
	}
	o.progress("pgo: collecting a %d s CPU profile from %s under %s", secs, homeRel(bin.Path), load)
	prof, note, err := o.CollectProfile(ctx, bin, secs, o.cmdLog())
	if err != nil {
		return nil, fmt.Errorf("collect pgo profile from %s: %w", bin.Path, err)
	}
	if err := CheckProfile(prof); err != nil {
		return nil, fmt.Errorf("collect pgo profile from %s: %w", bin.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("store pgo profile: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "tmp-")
	if err != nil {
		return nil, fmt.Errorf("store pgo profile: %w", err)
	}
	defer os.RemoveAll(tmp)
	nb, _ := json.MarshalIndent(note, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "default.pgo"), prof, 0o644); err != nil {
		return nil, fmt.Errorf("store pgo profile: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "profile.json"), append(nb, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("store pgo profile: %w", err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("store pgo profile in %s: %w", dir, err)
	}
	if note.Calls > 0 {
		o.progress("pgo: profile %s (%s: %d calls, %.0f/s)", homeRel(pf), note.Load, note.Calls, note.CallsPerS)
	} else {
		o.progress("pgo: profile %s (%s)", homeRel(pf), note.Load)
	}
	return &profileInfo{Path: pf, SHA256: hex.EncodeToString(sha256Bytes(prof)), Note: nf, Load: note.Load}, nil
}

// noteLoad is the load the note at path records, or load when it records
// none.
func noteLoad(path, load string) string {
	var n ProfileNote
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &n) == nil && n.Load != "" {
		return n.Load
	}
	return load
}

func sha256Bytes(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
