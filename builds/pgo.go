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
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/prober"
)

// ErrNotProfile is returned for a PGO profile that is not a pprof CPU
// profile.
var ErrNotProfile = errors.New("not a pprof profile")

// profileInfo is the profile the pgo arm builds with.
type profileInfo struct {
	Path   string
	SHA256 string
	Note   string // the collection note beside a collected profile ("" = given)
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
	Calls       int64   `json:"calls"`
	CallsPerS   float64 `json:"calls_per_s"`
	Errors      int64   `json:"errors"`
	GoVersion   string  `json:"go_version"`
	Endpoint    string  `json:"endpoint"` // where the profile was fetched
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
	return &profileInfo{Path: abs, SHA256: hex.EncodeToString(sha256Bytes(b))}, nil
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

// collectedProfile reuses the profile collected for the same sources and
// duration, or collects one: the default arm, built with the debug hook,
// runs under load from our own client while its CPU profile is fetched.
func (o Options) collectedProfile(ctx context.Context, src Source) (*profileInfo, error) {
	col := &goBuild{arm: "default", instrument: true, o: o}
	in, err := col.inputs(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("collect pgo profile: %w", err)
	}
	secs := int((o.PGODuration + time.Second - 1) / time.Second)
	sum := sha256.Sum256(fmt.Appendf(nil, "%sprofile seconds %d\nload v1\n", in, secs))
	dir := filepath.Join(o.CacheDir, "profiles", hex.EncodeToString(sum[:16]))
	pf, nf := filepath.Join(dir, "default.pgo"), filepath.Join(dir, "profile.json")
	if b, err := os.ReadFile(pf); err == nil && CheckProfile(b) == nil {
		if _, err := os.Stat(nf); err == nil {
			o.progress("pgo: reusing the profile collected earlier: %s", pf)
			return &profileInfo{Path: pf, SHA256: hex.EncodeToString(sha256Bytes(b)), Note: nf}, nil
		}
	}
	bin, err := Cached(col, o).Build(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("collect pgo profile: %w", err)
	}
	o.progress("pgo: collecting a %d s CPU profile from %s under load", secs, bin.Path)
	prof, note, err := o.collect(ctx, bin, secs)
	if err != nil {
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
	o.progress("pgo: profile %s (%d calls, %.0f/s)", pf, note.Calls, note.CallsPerS)
	return &profileInfo{Path: pf, SHA256: hex.EncodeToString(sha256Bytes(prof)), Note: nf}, nil
}

// collect runs bin, loads it and fetches a secs-long CPU profile from its
// debug listener.
func (o Options) collect(ctx context.Context, bin Artifact, secs int) ([]byte, ProfileNote, error) {
	note := ProfileNote{Server: bin.Path, Package: bin.Package, Arm: "default, with the debug hook", GoVersion: bin.GoVersion, DurationS: float64(secs)}
	target, err := prober.FreeTCP()
	if err != nil {
		return nil, note, err
	}
	debug, err := otherFreeTCP(target)
	if err != nil {
		return nil, note, err
	}
	inst, err := prober.Process{}.Launch(ctx, prober.Spec{
		Arm:    "pgo-collect",
		Path:   bin.Path,
		Env:    []string{"COLDSTART_DEBUG_ADDR=" + debug.Address},
		Target: target,
		ID:     prober.NewID(),
		Log:    o.cmdLog(),
	})
	if err != nil {
		return nil, note, err
	}
	defer inst.Stop(context.WithoutCancel(ctx))
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{}); err != nil {
		return nil, note, err
	}

	cc, err := grpc.NewClient(target.GRPCTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, note, fmt.Errorf("dial %s: %w", target, err)
	}
	defer cc.Close()
	call, load, err := pickLoad(ctx, cc)
	if err != nil {
		return nil, note, err
	}
	note.Load = load
	note.Endpoint = "http://" + debug.Address + "/debug/pprof/profile?seconds=" + fmt.Sprint(secs)

	lctx, stopLoad := context.WithCancel(ctx)
	var calls, errs atomic.Int64
	var wg sync.WaitGroup
	for range loadWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				if err := call(lctx); err != nil {
					if lctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				calls.Add(1)
			}
		}()
	}
	start := time.Now()
	prof, err := fetchProfile(ctx, note.Endpoint, secs)
	elapsed := time.Since(start)
	stopLoad()
	wg.Wait()
	if err != nil {
		return nil, note, err
	}
	if err := CheckProfile(prof); err != nil {
		return nil, note, fmt.Errorf("fetched profile from %s: %w", note.Endpoint, err)
	}
	note.CollectedAt = time.Now().UTC().Format(time.RFC3339)
	note.Calls, note.Errors = calls.Load(), errs.Load()
	note.CallsPerS = float64(note.Calls) / elapsed.Seconds()
	return prof, note, nil
}

// otherFreeTCP picks a free port other than t's: FreeTCP closes the port
// it found, so two calls may return the same one.
func otherFreeTCP(t prober.Target) (prober.Target, error) {
	for i := 0; ; i++ {
		d, err := prober.FreeTCP()
		if err != nil || d.Address != t.Address || i == 10 {
			return d, err
		}
	}
}

// loadWorkers is how many goroutines share the one load connection.
const loadWorkers = 4

// pickLoad chooses the load: unary Echo with a 64-byte payload when the
// server has the Echo service, else health checks.
func pickLoad(ctx context.Context, cc *grpc.ClientConn) (func(context.Context) error, string, error) {
	echo := echopb.NewEchoClient(cc)
	req := &echopb.EchoRequest{Payload: bytes.Repeat([]byte("x"), 64)}
	echoCall := func(ctx context.Context) error { _, err := echo.Echo(ctx, req); return err }
	err := echoCall(ctx)
	if err == nil {
		return echoCall, fmt.Sprintf("gRPC Echo unary, 64-byte payload, %d goroutines over one connection", loadWorkers), nil
	}
	if status.Code(err) != codes.Unimplemented {
		return nil, "", fmt.Errorf("first Echo call: %w", err)
	}
	hc := healthpb.NewHealthClient(cc)
	hreq := &healthpb.HealthCheckRequest{}
	healthCall := func(ctx context.Context) error { _, err := hc.Check(ctx, hreq); return err }
	if err := healthCall(ctx); err != nil {
		return nil, "", fmt.Errorf("first health check: %w", err)
	}
	return healthCall, fmt.Sprintf("gRPC health checks (the server has no coldstart Echo service), %d goroutines over one connection", loadWorkers), nil
}

// fetchProfile GETs a CPU profile, retrying briefly while the debug
// listener comes up.
func fetchProfile(ctx context.Context, url string, secs int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			lastErr = err
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("fetch profile %s: %w", url, lastErr)
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("fetch profile %s: %w", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch profile %s: %s: %s", url, resp.Status, tail(string(b), 5, 500))
		}
		return b, nil
	}
	return nil, fmt.Errorf("fetch profile %s: %w (is the server's debug listener on $COLDSTART_DEBUG_ADDR?)", url, lastErr)
}

func sha256Bytes(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
